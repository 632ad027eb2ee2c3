package suite

import (
	"fmt"
	"os"

	"github.com/packfs/packfs/bench/storebench"
)

func init() {
	Register(&Category{
		Name:  "durable",
		Title: "Durable transactions: the store against bbolt and the fdatasync floor",
		Order: 110,
		Doc: `The workloads of the C predecessor's durable-transaction engine (seed
004), on the default temporary directory. **Single-key**: N files of 128
bytes exist (4,096, 16,384 and 65,536; checkpointed into a pack), then
128 transactions each overwrite one file with a 128-byte value and
commit durably; keys are drawn from the first 64 files (hot prefix) or
from all of them (uniform). Rows: ` + "`packfs store`" + ` (Update under the default
SyncOnCommit: one fdatasync per commit), the same with 8 goroutines
committing 128 transactions each (group commit), bbolt with its default
sync (two fdatasyncs per transaction), and
` + "`raw fdatasync`" + `: appending the same record to a file and calling
fdatasync, the physical floor every durable commit stands on, which is
the baseline of "vs base". Per-operation cost is per transaction.
**128-key**: 64 transactions each write 128 new 128-byte files.
**Recovery**: reopening a store whose log holds about 100 MB of changes
(10 MB in quick mode), which replays it.

The notes give PackFS's fdatasyncs per transaction (1 plus the
checkpoint's), host bytes written per transaction (the log's records
plus the zeros it preallocates a MiB at a time, which over 128
transactions add 8 KiB each and over a long run as much again as the
records; the final checkpoint not included) and the final checkpoint's
time. fdatasync times on these
shared machines swing several-fold from one minute to the next: compare
rows of one run, not runs.`,
		Run: runDurable,
	})
}

func runDurable(c *Ctx) error {
	place := c.Places[0]
	filesList := []int{4096, 16384, 65536}
	if c.Quick {
		filesList = []int{4096}
	}
	tiny := c.N < 1000 // the runner's own test: sizes for seconds
	if tiny {
		filesList = []int{64}
	}
	const txs = 128
	type stat struct{ syncs, bytes, ckpt []float64 }
	notes := map[string]*stat{}
	note := func(key string, r storebench.Result) {
		s := notes[key]
		if s == nil {
			s = &stat{}
			notes[key] = s
		}
		s.syncs = append(s.syncs, r.SyncsPerTx())
		s.bytes = append(s.bytes, r.BytesPerTx())
		s.ckpt = append(s.ckpt, float64(r.Checkpoint.Microseconds())/1000)
	}
	inDir := func(fn func(dir string) (storebench.Result, error)) (storebench.Result, error) {
		dir, err := c.TempDir(place)
		if err != nil {
			return storebench.Result{}, err
		}
		defer os.RemoveAll(dir)
		return fn(dir)
	}
	type row struct {
		name string
		ours bool
		w    int
		run  func(dir string, files int, hot bool, w int) (storebench.Result, error)
	}
	rows := []row{
		{"packfs store", true, 1, func(d string, f int, h bool, w int) (storebench.Result, error) {
			return storebench.PackFSSingleKey(d, f, txs, w, h)
		}},
		{"packfs store, 8 committers", true, 8, func(d string, f int, h bool, w int) (storebench.Result, error) {
			return storebench.PackFSSingleKey(d, f, txs, w, h)
		}},
		{"bbolt", false, 1, func(d string, f int, h bool, w int) (storebench.Result, error) {
			return storebench.BoltSingleKey(d, f, txs, w, h)
		}},
		{"raw fdatasync", false, 1, func(d string, _ int, _ bool, _ int) (storebench.Result, error) {
			return storebench.RawFsync(d, txs)
		}},
	}
	for _, files := range filesList {
		for _, hot := range []bool{true, false} {
			keys := "uniform"
			if hot {
				keys = "hot prefix"
			}
			id := fmt.Sprintf("single-%d-%s", files, keys)
			t := c.Table(id, fmt.Sprintf("128 single-key transactions over %d files, %s keys", files, keys), "tx")
			t.Base = "raw fdatasync"
			// Rounds interleave the backends, so that the disk's swings
			// fall on all of them alike; the ratios are of one round's
			// rates.
			var groupRatio, boltRatio []float64
			for range c.Runs {
				rate := map[string]float64{}
				for _, r := range rows {
					res, err := inDir(func(d string) (storebench.Result, error) { return r.run(d, files, hot, r.w) })
					if err != nil {
						return fmt.Errorf("%s: %w", r.name, err)
					}
					t.Record(Spec{Backend: r.name, Where: place.Name, N: files, Ours: r.ours, Ops: res.Tx}, res.Elapsed)
					rate[r.name] = res.TxPerSec()
					if r.ours {
						note(id+"/"+r.name, res)
					}
				}
				groupRatio = append(groupRatio, rate["packfs store, 8 committers"]/rate["packfs store"])
				boltRatio = append(boltRatio, rate["packfs store"]/rate["bbolt"])
			}
			t.Note("packfs store: %.2fx bbolt's rate; 8 committers: %.2fx one committer's (medians of one round's ratios)",
				median(boltRatio), median(groupRatio))
			for _, r := range rows {
				if s := notes[id+"/"+r.name]; s != nil {
					t.Note("%s: %.2f fdatasyncs/tx, %.0f host bytes/tx, final checkpoint %.1f ms (medians)",
						r.name, median(s.syncs), median(s.bytes), median(s.ckpt))
				}
			}
		}
	}

	multi := c.Table("multi", "64 transactions of 128 new keys each", "tx")
	multi.NoBaseline = true
	var multiRatio []float64
	for range c.Runs {
		res, err := inDir(func(d string) (storebench.Result, error) { return storebench.PackFSMultiKey(d, 64, 128) })
		if err != nil {
			return err
		}
		multi.Record(Spec{Backend: "packfs store", Where: place.Name, N: 128, Ours: true, Ops: res.Tx}, res.Elapsed)
		note("multi", res)
		bres, err := inDir(func(d string) (storebench.Result, error) { return storebench.BoltMultiKey(d, 64, 128) })
		if err != nil {
			return err
		}
		multi.Record(Spec{Backend: "bbolt", Where: place.Name, N: 128, Ops: bres.Tx}, bres.Elapsed)
		multiRatio = append(multiRatio, res.TxPerSec()/bres.TxPerSec())
	}
	s := notes["multi"]
	multi.Note("packfs store: %.2fx bbolt's rate (median of one round's ratios); %.2f fdatasyncs/tx, %.0f host bytes/tx, final checkpoint of 8,192 files %.1f ms (medians)",
		median(multiRatio), median(s.syncs), median(s.bytes), median(s.ckpt))

	size := int64(100 << 20)
	switch {
	case tiny:
		size = 1 << 20
	case c.Quick:
		size = 10 << 20
	}
	rec := c.Table("recovery", fmt.Sprintf("reopening a store with a %d MB log", size>>20), "MB")
	rec.NoBaseline = true
	for range c.Runs {
		dir, err := c.TempDir(place)
		if err != nil {
			return err
		}
		d, logBytes, err := storebench.Recovery(dir, size)
		os.RemoveAll(dir)
		if err != nil {
			return err
		}
		rec.Record(Spec{Backend: "packfs store", Where: place.Name, N: int(size >> 20), Ours: true, Ops: int(logBytes >> 20), Bytes: logBytes}, d)
	}
	return nil
}
