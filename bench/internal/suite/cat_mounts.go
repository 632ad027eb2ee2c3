package suite

import (
	"fmt"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
)

func init() {
	Register(&Category{
		Name:  "mounts",
		Title: "Mounts: mount, resolve through, unmount",
		Order: 60,
		Doc: `A union gets M directories, then M layers are mounted on them one by one
(Mount), a file is stat'ed through each mount (resolve), and they are
unmounted one by one, at M = 500, 2,000 and 8,000 (N/40, N/10 and
4N/10). The predecessor's mount table copied the whole array on every
change and scanned it on every lookup: per mount its cost grew 4.4x for
each 4x in M (quadratic in total). Ours is a persistent ordered map:
"per mount" should barely move as M grows; the growth lines under the
tables give cost per operation at 4M over M. No alternative has mounts,
so there is no ratio.`,
		Run: runMounts,
	})
}

func runMounts(c *Ctx) error {
	site := mem.New()
	if err := site.WriteFile("index.html", []byte("x"), 0o644); err != nil {
		return err
	}
	snap := site.Snapshot()
	tables := map[string]*Table{}
	for _, op := range []string{"mount", "resolve", "unmount"} {
		tables[op] = c.Table(op, op+" M mounts", "mount")
		tables[op].NoBaseline = true
	}
	base := 500
	if c.N < 2_000 {
		base = c.Scale(500, 5)
	}
	for _, m := range []int{base, 4 * base, 16 * base} {
		u := packfs.New(mem.New())
		dirs := make([]string, m)
		files := make([]string, m)
		for i := range dirs {
			dirs[i] = fmt.Sprintf("m%05d", i)
			files[i] = dirs[i] + "/index.html"
			if err := u.Mkdir(dirs[i], 0o755); err != nil {
				return err
			}
		}
		spec := Spec{Backend: "union", Ours: true, Where: Memory, N: m, Ops: m}
		for range c.Runs {
			err := tables["mount"].Time(spec, func() error {
				for _, d := range dirs {
					if err := u.Mount(d, snap); err != nil {
						return err
					}
				}
				return nil
			})
			if err == nil {
				err = tables["resolve"].Time(spec, func() error {
					for _, f := range files {
						if _, err := u.Stat(f); err != nil {
							return err
						}
					}
					return nil
				})
			}
			if err == nil {
				err = tables["unmount"].Time(spec, func() error {
					for _, d := range dirs {
						if err := u.Unmount(d); err != nil {
							return err
						}
					}
					return nil
				})
			}
			if err != nil {
				return err
			}
		}
	}
	for _, op := range []string{"mount", "resolve", "unmount"} {
		t := tables[op]
		for _, s := range t.Series() {
			for _, m := range []int{base, 4 * base} {
				if g := s.Growth(m); g == g {
					t.Note("- growth %s → %s: %.2f×", commas(m), commas(4*m), g)
				}
			}
		}
	}
	return nil
}
