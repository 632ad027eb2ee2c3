package packfs

import (
	"fmt"
	"io/fs"
	"slices"
)

// StoreInfo describes a store's durable state: what its manifest lists
// and how much log lies beyond it.
type StoreInfo struct {
	Generation uint64   // checkpoints made since the store was created
	Packs      []string // the packs' file names in the store directory, top first
	LogSegment uint64   // the first log segment a replay reads
	LogBytes   int64    // bytes in the live log segments, which the next checkpoint covers
	ReadOnly   bool     // opened with Options.ReadOnly
}

// Info describes the store's state as of the call. A store opened
// ReadOnly describes the state it opened in: it does not follow a writer.
func (s *Store) Info() StoreInfo {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	packs := make([]string, len(s.man.packs))
	for i, p := range s.man.packs {
		packs[i] = p.name
	}
	return StoreInfo{
		Generation: s.man.gen,
		Packs:      packs,
		LogSegment: s.man.wal,
		LogBytes:   s.log.Size(),
		ReadOnly:   s.opts.ReadOnly,
	}
}

// Verify checks every pack the store reads in full, with
// packreader.Reader.Verify: structure, checksums and each content's
// SHA-256. The log needs no second look: Open replayed every record of
// it, checking each one's checksum, and fails on damage. Verify holds
// off checkpoints while it runs; reads and writes go on.
func (s *Store) Verify() error {
	s.ckMu.Lock()
	defer s.ckMu.Unlock()
	s.wmu.Lock()
	packs, closed := slices.Clone(s.packs), s.closed
	s.wmu.Unlock()
	if closed {
		return fs.ErrClosed
	}
	for _, p := range packs {
		if err := p.r.Verify(); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	return nil
}
