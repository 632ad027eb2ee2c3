// Package storebench measures PackFS's durable store on the workloads of
// the C predecessor's durable-transaction engine: single-key transactions
// over 4,096 to 65,536 existing files, with hot-prefix and uniform keys,
// and 128-key transactions; beside go.etcd.io/bbolt on the same workload
// and a raw append+fdatasync loop, the physical floor. Each reports the
// process's CPU time per transaction beside the rate, steadier on a
// shared machine.
//
// afero_test.go times the store with SyncNone through the afero adapter
// beside afero's MemMapFs, the union the store is built on and the
// in-memory layer, on the small-file workloads of aferobench, and a
// 64 MiB sequential write beside os.
package storebench

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/bench/internal/cputime"
	"github.com/packfs/packfs/vfs"
	bolt "go.etcd.io/bbolt"
)

// Result is one measured run.
type Result struct {
	Tx         int           // transactions committed
	Elapsed    time.Duration // committing them
	Syncs      int64         // fsync and fdatasync calls (-1: not counted)
	Bytes      int64         // bytes written to the host (-1: not counted)
	Checkpoint time.Duration // the final checkpoint, where there is one
	CPU        time.Duration // the process's CPU time while committing
	// CheckpointSyncs counts the fsyncs of the final checkpoint, which
	// covers the transactions' log: their share, amortized.
	CheckpointSyncs int64
}

// CPUPerTx returns the process's CPU time per transaction, in µs: on a
// shared machine, steadier than the rate.
func (r Result) CPUPerTx() float64 { return float64(r.CPU.Microseconds()) / float64(r.Tx) }

// TxPerSec returns transactions per second.
func (r Result) TxPerSec() float64 { return float64(r.Tx) / r.Elapsed.Seconds() }

// SyncsPerTx returns syncs per transaction.
func (r Result) SyncsPerTx() float64 { return float64(r.Syncs) / float64(r.Tx) }

// BytesPerTx returns host bytes written per transaction.
func (r Result) BytesPerTx() float64 { return float64(r.Bytes) / float64(r.Tx) }

// Value is the 128-byte value every transaction writes.
var Value = []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" +
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")

// Key returns the name of existing file i.
func Key(i int) string { return fmt.Sprintf("k/%06d", i) }

// Keys returns the keys n transactions of one committer write over files
// existing files: all among the first 64 (hot) or spread uniformly.
func Keys(n, files int, hot bool, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 11))
	keys := make([]string, n)
	for i := range keys {
		if hot {
			keys[i] = Key(r.IntN(min(64, files)))
		} else {
			keys[i] = Key(r.IntN(files))
		}
	}
	return keys
}

// counting is a host directory that counts syncs and bytes written.
type counting struct {
	*vfs.Dir
	syncs, bytes atomic.Int64
}

func (c *counting) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := c.Dir.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, c: c}, nil
}

func (c *counting) SyncDir() error {
	c.syncs.Add(1)
	return c.Dir.SyncDir()
}

type countingFile struct {
	vfs.File
	c *counting
}

func (f *countingFile) Write(p []byte) (int, error) {
	f.c.bytes.Add(int64(len(p)))
	return f.File.Write(p)
}

func (f *countingFile) WriteAt(p []byte, off int64) (int, error) {
	f.c.bytes.Add(int64(len(p)))
	return f.File.WriteAt(p, off)
}

func (f *countingFile) Sync() error {
	f.c.syncs.Add(1)
	return f.File.Sync()
}

// OpenStore opens a store in dir with files existing 128-byte files,
// checkpointed into a pack, and returns it with its counters.
func openStore(dir string, files int) (*packfs.Store, *counting, error) {
	d, err := vfs.OpenDir(dir)
	if err != nil {
		return nil, nil, err
	}
	c := &counting{Dir: d}
	s, err := packfs.Open(dir, &packfs.Options{FS: c})
	if err != nil {
		return nil, nil, err
	}
	if err := s.Mkdir("k", 0o755); err != nil {
		return nil, nil, err
	}
	for start := 0; start < files; start += 1024 {
		err := s.Update(func(tx *packfs.Tx) error {
			for i := start; i < min(start+1024, files); i++ {
				if err := tx.WriteFile(Key(i), Value, 0o644); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if err := s.Checkpoint(); err != nil {
		return nil, nil, err
	}
	c.syncs.Store(0)
	c.bytes.Store(0)
	return s, c, nil
}

// commit runs committers goroutines, each committing txs single-key
// transactions with fn over keys of files files, and returns the first
// error.
func commit(txs, files, committers int, hot bool, fn func(key string) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, committers)
	for w := range committers {
		keys := Keys(txs, files, hot, uint64(w))
		wg.Go(func() {
			for _, k := range keys {
				if err := fn(k); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// PackFSSingleKey commits txs single-key transactions per committer, with
// committers goroutines, over files existing files, then checkpoints.
func PackFSSingleKey(dir string, files, txs, committers int, hot bool) (Result, error) {
	s, c, err := openStore(dir, files)
	if err != nil {
		return Result{}, err
	}
	defer s.Close()
	start, cpu := time.Now(), cputime.Now()
	err = commit(txs, files, committers, hot, func(k string) error {
		return s.Update(func(tx *packfs.Tx) error { return tx.WriteFile(k, Value, 0o644) })
	})
	r := Result{Tx: txs * committers, Elapsed: time.Since(start), Syncs: c.syncs.Load(), Bytes: c.bytes.Load(), CPU: cputime.Now() - cpu}
	if err != nil {
		return r, err
	}
	t := time.Now()
	err = s.Checkpoint()
	r.Checkpoint = time.Since(t)
	r.CheckpointSyncs = c.syncs.Load() - r.Syncs
	return r, err
}

// PackFSMultiKey commits txs transactions of keys new keys each.
func PackFSMultiKey(dir string, txs, keys int) (Result, error) {
	s, c, err := openStore(dir, 0)
	if err != nil {
		return Result{}, err
	}
	defer s.Close()
	start, cpu := time.Now(), cputime.Now()
	for t := range txs {
		err := s.Update(func(tx *packfs.Tx) error {
			for k := range keys {
				if err := tx.WriteFile(fmt.Sprintf("k/t%03d-%03d", t, k), Value, 0o644); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return Result{}, err
		}
	}
	r := Result{Tx: txs, Elapsed: time.Since(start), Syncs: c.syncs.Load(), Bytes: c.bytes.Load(), CPU: cputime.Now() - cpu}
	t := time.Now()
	err = s.Checkpoint()
	r.Checkpoint = time.Since(t)
	r.CheckpointSyncs = c.syncs.Load() - r.Syncs
	return r, err
}

// openBolt opens a bbolt database in dir with files existing keys.
func openBolt(dir string, files int) (*bolt.DB, error) {
	db, err := bolt.Open(filepath.Join(dir, "bolt.db"), 0o644, nil)
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("k"))
		if err != nil {
			return err
		}
		for i := range files {
			if err := b.Put([]byte(Key(i)), Value); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// BoltSingleKey is PackFSSingleKey on bbolt, with its default sync.
func BoltSingleKey(dir string, files, txs, committers int, hot bool) (Result, error) {
	db, err := openBolt(dir, files)
	if err != nil {
		return Result{}, err
	}
	defer db.Close()
	start, cpu := time.Now(), cputime.Now()
	err = commit(txs, files, committers, hot, func(k string) error {
		return db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("k")).Put([]byte(k), Value) })
	})
	return Result{Tx: txs * committers, Elapsed: time.Since(start), Syncs: -1, Bytes: -1, CPU: cputime.Now() - cpu}, err
}

// BoltMultiKey is PackFSMultiKey on bbolt.
func BoltMultiKey(dir string, txs, keys int) (Result, error) {
	db, err := openBolt(dir, 0)
	if err != nil {
		return Result{}, err
	}
	defer db.Close()
	start, cpu := time.Now(), cputime.Now()
	for t := range txs {
		err := db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("k"))
			for k := range keys {
				if err := b.Put(fmt.Appendf(nil, "k/t%03d-%03d", t, k), Value); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return Result{}, err
		}
	}
	return Result{Tx: txs, Elapsed: time.Since(start), Syncs: -1, Bytes: -1, CPU: cputime.Now() - cpu}, nil
}

// RawFsync appends txs records of a key and a 128-byte value to a file,
// each followed by fdatasync: the floor any durable commit stands on.
func RawFsync(dir string, txs int) (Result, error) {
	d, err := vfs.OpenDir(dir)
	if err != nil {
		return Result{}, err
	}
	f, err := d.OpenFile("raw.log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return Result{}, err
	}
	defer f.Close()
	rec := append([]byte(Key(0)), Value...)
	start := time.Now()
	for range txs {
		if _, err := f.Write(rec); err != nil {
			return Result{}, err
		}
		if err := f.Sync(); err != nil {
			return Result{}, err
		}
	}
	return Result{Tx: txs, Elapsed: time.Since(start), Syncs: int64(txs), Bytes: int64(txs * len(rec))}, nil
}

// Recovery writes about size bytes of changes to a store's log (4 KiB
// files, no checkpoint), closes it, and times reopening it, which replays
// the whole log.
func Recovery(dir string, size int64) (time.Duration, int64, error) {
	s, err := packfs.Open(dir, &packfs.Options{Sync: packfs.SyncNone, CheckpointBytes: -1})
	if err != nil {
		return 0, 0, err
	}
	data := make([]byte, 4096)
	for i := 0; int64(i)*4096 < size; i++ {
		if i%1000 == 0 {
			if err := s.Mkdir(fmt.Sprintf("d%d", i/1000), 0o755); err != nil {
				return 0, 0, err
			}
		}
		data[0] = byte(i)
		if err := s.WriteFile(fmt.Sprintf("d%d/f%d", i/1000, i), data, 0o644); err != nil {
			return 0, 0, err
		}
	}
	if err := s.Close(); err != nil {
		return 0, 0, err
	}
	var logBytes int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && filepath.Ext(p) == ".log" {
			if fi, err := d.Info(); err == nil {
				logBytes += fi.Size()
			}
		}
		return nil
	})
	start := time.Now()
	s, err = packfs.Open(dir, nil)
	if err != nil {
		return 0, 0, err
	}
	elapsed := time.Since(start)
	return elapsed, logBytes, s.Close()
}
