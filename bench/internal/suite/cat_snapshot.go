package suite

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/packfs/packfs/bench/internal/workload"
	"github.com/packfs/packfs/layer/mem"
)

func init() {
	Register(&Category{
		Name:  "snapshot",
		Title: "Snapshot under load: readers while a writer runs",
		Order: 100,
		Doc: `N files of 128 bytes exist; reader goroutines (one fewer than the cores,
at least one) each read N of them at random (ReadFile), once with no
writer and once while one writer goroutine loops overwriting random
files with WriteFile and creating and removing a file of its own. The
tables give the readers' cost per read; the note under each gives the
ratio loaded/idle and how many writes the writer made per second.
` + "`mem snapshot`" + ` readers read a snapshot taken before the writer
started, while the writer writes the live layer.

mem's readers take no lock: they load the root atomically and walk
immutable nodes, so a writer slows them only by competing for cores and
caches. MemMapFs readers take a read lock per call that the writer's
write lock excludes; on the host, the writer's creates and removes take
the directory's lock in the kernel. The writer's rate matters too: a
file system that starves its writer looks good here, so both are
shown.`,
		Run: runSnapshot,
	})
}

type readTarget struct {
	Target
	write workload.FS // where the writer writes
	read  workload.FS // where the readers read
	snap  *mem.FS     // set: readers read a snapshot of it
}

func runSnapshot(c *Ctx) error {
	n := c.N
	readers := max(1, runtime.NumCPU()-1)
	data := workload.Payload(Small)
	idle := c.Table("idle", fmt.Sprintf("%d reader(s), no writer", readers), "read")
	loaded := c.Table("loaded", fmt.Sprintf("%d reader(s) while a writer runs", readers), "read")

	var targets []readTarget
	defer func() {
		for _, t := range targets {
			t.write.Close()
		}
	}()
	for _, tg := range c.Targets(workload.KindMem, workload.KindUnion, workload.KindMemMapFs, workload.KindOS) {
		fsys, err := tg.New(c)
		if err != nil {
			return err
		}
		targets = append(targets, readTarget{tg, fsys, fsys, nil})
		if tg.Kind.Name == "mem" {
			m := mem.New()
			targets = append(targets, readTarget{Target{Kind: kindMemSnap, Where: Memory}, workload.NewLayer(m), nil, m})
		}
	}
	for i := range targets {
		t := &targets[i]
		if err := t.write.Mkdir(t.write.Path("run")); err != nil {
			return err
		}
		if err := workload.CreateAll(t.write, workload.Names(t.write, "run", "f", n), data); err != nil {
			return err
		}
		if t.snap != nil {
			t.read = workload.NewReadOnly(t.snap.Snapshot(), nil)
		}
	}
	writes := map[string][]float64{}
	for rep := range c.Runs {
		for _, t := range targets {
			names := workload.Names(t.read, "run", "f", n)
			wnames := workload.Names(t.write, "run", "f", n)
			spec := t.Spec(n, readers*n, int64(readers*n*Small))
			read := func() error {
				return workload.Parallel(readers, func(g int) error {
					r := rand.New(rand.NewPCG(uint64(rep), uint64(g)))
					for range n {
						// os.WriteFile truncates before it writes, so a
						// host reader may see the file empty: no length
						// check. MemMapFs reports such a read as
						// ErrUnexpectedEOF: it counts as done too.
						if _, err := t.read.ReadFile(names[r.IntN(n)]); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
							return err
						}
					}
					return nil
				})
			}
			if err := idle.Time(spec, read); err != nil {
				return err
			}
			var stop atomic.Bool
			done := make(chan error, 1)
			var count int
			start := time.Now()
			go func() {
				r := rand.New(rand.NewPCG(uint64(rep), 99))
				own := t.write.Path("run/writer")
				for !stop.Load() {
					err := workload.Join(t.write.WriteFile(wnames[r.IntN(n)], data),
						t.write.Create(own, data), t.write.Remove(own))
					if err != nil {
						done <- err
						return
					}
					count++
				}
				done <- nil
			}()
			err := loaded.Time(spec, read)
			stop.Store(true)
			if werr := <-done; err == nil {
				err = werr
			}
			if err != nil {
				return err
			}
			key := backendLabel(&Row{Spec: spec}) + " (" + t.Where + ")"
			writes[key] = append(writes[key], 3*float64(count)/time.Since(start).Seconds())
		}
	}
	for _, r := range loaded.Rows {
		key := backendLabel(r) + " (" + r.Where + ")"
		var ir *Row
		for _, o := range idle.Rows {
			if o.Backend == r.Backend && o.Where == r.Where {
				ir = o
			}
		}
		loaded.Note("- %s: loaded/idle %s, writer %s writes/s", key, fmtRatio(loaded.Ratio(r, ir)), fmtRate(median(writes[key])))
	}
	return nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}
