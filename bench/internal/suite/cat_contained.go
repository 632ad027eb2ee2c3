package suite

import (
	"github.com/packfs/packfs/bench/internal/workload"
)

func init() {
	Register(&Category{
		Name:  "contained",
		Title: "Contained access: dirfs against os.Root and os",
		Order: 70,
		Doc: `N/4 files (5,000 in the full run) are created empty (Create, Close)
in a subdirectory, stat'ed, and opened and closed, by names with a
directory part ("d/f0000001"), and the subdirectory is listed, through
dirfs (openat2 with RESOLVE_BENEATH), dirfs
forced onto its os.Root fallback (` + "`dirfs (os.Root)`" + `), os.Root itself, and
plain os with joined paths, which checks nothing and is the floor.

Containment costs system calls: dirfs resolves "d" to a descriptor with
openat2, makes the *at call relative to it and closes it, three calls
where os makes one, which is why its stat costs about twice os.Stat's.
os.Root walks the name one component at a time with openat and
O_NOFOLLOW, so its cost grows with the depth of the name. Create and open
cost about what os's do: the descriptor work is paid back by not
registering the file with Go's netpoller. A ReadDir (file names and types,
no stat) costs dirfs about what it costs os; os.Root's is several times
slower, because a directory opened in a Root cannot stat its entries
lazily by path, so File.ReadDir fstatat's every entry as it lists it (Go's
os/file_unix.go, newUnixDirent).`,
		Run: runContained,
	})
}

var kindDirfsRoot = workload.Kind{Name: "dirfs (os.Root)", Ours: true, Host: true, Concurrent: true, New: workload.NewDirfsRoot}

func runContained(c *Ctx) error {
	n := c.Scale(5_000, 10)
	create := c.Table("create", "create N/4 empty files (Create, Close)", "file")
	stat := c.Table("stat", "stat N/4 files", "file")
	open := c.Table("open", "open and close N/4 files", "file")
	readdir := c.Table("readdir", "readdir of N/4 entries (one ReadDir)", "entry")
	targets := c.Targets(workload.KindDirfs, kindDirfsRoot, workload.KindOSRoot, workload.KindOS)
	for range c.Runs {
		for _, tg := range targets {
			fsys, err := tg.New(c)
			if err != nil {
				return err
			}
			names := workload.Names(fsys, "d", "f", n)
			spec := tg.Spec(n, n, 0)
			err = fsys.Mkdir(fsys.Path("d"))
			if err == nil {
				err = create.Time(spec, func() error { return workload.CreateAll(fsys, names, nil) })
			}
			if err == nil {
				err = stat.Time(spec, func() error { return workload.StatAll(fsys, names) })
			}
			if err == nil {
				err = open.Time(spec, func() error {
					for _, name := range names {
						f, err := fsys.OpenRead(name)
						if err != nil {
							return err
						}
						if err := f.Close(); err != nil {
							return err
						}
					}
					return nil
				})
			}
			if err == nil {
				dir := fsys.Path("d")
				err = readdir.Time(spec, func() error { return workload.ReadDirCount(fsys, dir, n) })
			}
			if cerr := fsys.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}
