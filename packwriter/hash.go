package packwriter

import (
	"hash/crc32"

	"github.com/packfs/packfs/internal/packformat"
)

// Small files are hashed on a second goroutine. Their SHA-256 and CRC-32C
// are pure computation on bytes the writer already holds, so it hands them
// in batches to one hashing goroutine and goes on reading the source tree.
// Batches come back in the order they were sent and are stored
// (deduplicated and written) in that order, on the goroutine running Write:
// the output does not depend on timing, and only that goroutine touches the
// source fs.FS and the destination.

const (
	batchFiles  = 64      // files per batch
	batchBytes  = 1 << 20 // or fewer, once their contents reach this
	maxInflight = 3       // batches sent and not yet stored
)

// job is one small file waiting to be stored.
type job struct {
	k    *node
	path string
	data []byte
	sum  [32]byte
	crc  uint32
}

// queue adds the file at path p, of content data, to the current batch,
// and sends the batch when it is full.
func (w *writer) queue(k *node, p string, data []byte) error {
	w.batch = append(w.batch, job{k: k, path: p, data: data})
	w.batchBytes += len(data)
	if len(w.batch) < batchFiles && w.batchBytes < batchBytes {
		return nil
	}
	if w.hashIn == nil {
		w.hashIn = make(chan []job, maxInflight)
		w.hashOut = make(chan []job, maxInflight) // never full: the hasher never blocks
		go w.hashLoop(w.hashIn, w.hashOut)
	}
	w.hashIn <- w.batch
	w.batch, w.batchBytes = w.free, 0
	w.free = nil
	if w.inflight++; w.inflight == maxInflight {
		return w.receive()
	}
	return nil
}

// receive stores the oldest batch sent.
func (w *writer) receive() error {
	w.inflight--
	return w.storeBatch(<-w.hashOut)
}

func (w *writer) hashLoop(in <-chan []job, out chan<- []job) {
	for b := range in {
		for i := range b {
			w.hash(&b[i])
		}
		out <- b
	}
}

func (w *writer) hash(j *job) {
	j.sum = w.sum(j.data)
	j.crc = crc32.Checksum(j.data, packformat.Castagnoli)
}

// drain stores every queued file, in the order they were queued.
func (w *writer) drain() error {
	for w.inflight > 0 {
		if err := w.receive(); err != nil {
			return err
		}
	}
	if len(w.batch) == 0 {
		return nil
	}
	b := w.batch
	w.batch, w.batchBytes = nil, 0
	for i := range b {
		w.hash(&b[i])
	}
	return w.storeBatch(b)
}

// storeBatch stores the files of a hashed batch and keeps the batch's
// memory for a later one.
func (w *writer) storeBatch(b []job) error {
	for i := range b {
		j := &b[i]
		if err := w.storeSmall(j.k, j.path, j.data, j.sum, j.crc); err != nil {
			return err
		}
		w.progress(j.path)
	}
	clear(b)
	w.free = b[:0]
	return nil
}

// stopHashing ends the hashing goroutine, once it has finished the
// batches it holds.
func (w *writer) stopHashing() {
	if w.hashIn != nil {
		close(w.hashIn)
	}
}
