package conformance

import (
	"flag"
	"io/fs"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer"
)

// NewFS returns a fresh, empty writable file system for one test. It may
// register cleanups with t. The suite calls it many times per test (the
// differential test once per random sequence, and again while shrinking a
// failure), so it should be cheap.
type NewFS func(t *testing.T) layer.FS

// Tests maps names to tests of writable backends, in the manner of go-fuse's
// posixtest: a package may run a chosen few by name. [Run] runs them all.
// Each test sets the process umask to 0 while it runs (see the package
// documentation), so none of them calls t.Parallel.
var Tests = map[string]func(t *testing.T, newFS NewFS){}

// suiteTest is a test of Tests with the configuration Run passes.
type suiteTest func(t *testing.T, newFS NewFS, c *config)

// tests holds the suite; Tests is built from it with the default
// configuration.
var tests = map[string]suiteTest{}

func init() {
	for name, f := range tests {
		Tests[name] = func(t *testing.T, newFS NewFS) {
			withUmask0(t)
			f(t, newFS, newConfig(nil))
		}
	}
}

// register adds a test to the suite; each test file registers its tests
// from a package-level var so that the map is complete before init runs.
func register(name string, f suiteTest) bool {
	if _, dup := tests[name]; dup {
		panic("conformance: duplicate test " + name)
	}
	tests[name] = f
	return true
}

// Option adjusts [Run].
type Option func(*config)

type config struct {
	skip       map[string]string
	seeds      int
	ops        int
	quickTrees bool
	owners     bool
	wide       int // entries of the wide tree, if not 0
}

const (
	defaultSeeds      = 2000
	defaultRaceSeeds  = 500 // under the race detector
	defaultShortSeeds = 100
	defaultOps        = 50
)

var (
	flagSeeds = flag.Int("conformance.seeds", 0, "number of random sequences of the differential test (0: default, 100; with PACKFS_LONG=1, 2000, or 500 under -race)")
	flagSeed  = flag.Int64("conformance.seed", 0, "replay only this seed of the differential test, logging every operation")
	flagOps   = flag.Int("conformance.ops", 0, "operations per random sequence of the differential test (0: default, 50)")
)

func newConfig(opts []Option) *config {
	c := &config{skip: map[string]string{}, ops: defaultOps, seeds: defaultSeeds}
	switch {
	case testsize.Short():
		c.seeds = defaultShortSeeds
	case raceEnabled:
		c.seeds = defaultRaceSeeds
	}
	for _, o := range opts {
		o(c)
	}
	if *flagSeeds > 0 {
		c.seeds = *flagSeeds
	}
	if *flagOps > 0 {
		c.ops = *flagOps
	}
	return c
}

// Skip skips the test of [Tests] called name, giving reason, for a
// difference the backend documents and justifies. Run reports a name that
// is not in Tests as an error, so a renamed test is not skipped silently.
func Skip(name, reason string) Option {
	return func(c *config) { c.skip[name] = reason }
}

// WithSeeds sets how many random sequences the differential test runs
// (default 2,000; 100 with -short; 500 under the race detector, which
// slows this single goroutine's work tenfold). The flag -conformance.seeds
// overrides it.
func WithSeeds(n int) Option {
	return func(c *config) { c.seeds = n }
}

// WithWideEntries sets how many entries the wide tree of [Trees] has
// in the tests that populate it (2,000 at the quick size, 20,000 at the
// full one): for a backend each of whose calls is a round trip, such as
// a FUSE mount, whose quick run need not write thousands of files to
// show what a few hundred show (listings spanning many batches).
func WithWideEntries(n int) Option {
	return func(c *config) { c.wide = n }
}

// WithQuickTrees makes the tests that populate [Trees] use their quick
// sizes (2,000 entries, 1 MiB) whatever PACKFS_LONG says: for a backend
// whose every call is far slower than the others', such as one served
// through a FUSE mount under the race detector.
func WithQuickTrees() Option {
	return func(c *config) { c.quickTrees = true }
}

// WithOwners says the backend keeps owners, reported through
// FileInfo.Sys as [layer.OwnerOf] reads them, and sets a symlink's own
// times ([layer.LchtimesFS]). The differential test then compares each
// entry's owner with the host's (an id the backend does not record
// counts as the process's), runs some of its Chtimes as Lchtimes, and,
// as root, gives Chown and Lchown real ids and Chmod setuid and setgid
// bits. Without it Chown and Lchown keep every id (-1).
func WithOwners() Option {
	return func(c *config) { c.owners = true }
}

// WithOps sets how many operations each random sequence of the differential
// test has (default 50). The flag -conformance.ops overrides it.
func WithOps(n int) Option {
	return func(c *config) { c.ops = n }
}

// Run runs every test in [Tests] as a subtest, sorted by name, on file
// systems made by newFS. It sets the process umask to 0 for its duration and
// restores it afterwards, so it must not run in parallel with other tests of
// the same process that create files through package os.
func Run(t *testing.T, newFS NewFS, opts ...Option) {
	c := newConfig(opts)
	for name := range c.skip {
		if _, ok := tests[name]; !ok {
			t.Errorf("conformance.Skip(%q): no such test", name)
		}
	}
	withUmask0(t)
	for _, name := range slices.Sorted(maps.Keys(tests)) {
		t.Run(name, func(t *testing.T) {
			if reason, ok := c.skip[name]; ok {
				t.Skip(reason)
			}
			tests[name](t, newFS, c)
		})
	}
}

// withUmask0 sets the umask to 0 until t ends, so that modes given to os
// are the modes stored, as they are in an in-memory layer.
func withUmask0(t *testing.T) {
	old := setUmask(0)
	t.Cleanup(func() { setUmask(old) })
}

// Settler is implemented by stacked backends that can push their state down
// a layer in the middle of a sequence: a union, say, that freezes its upper
// layer into a new lower one and starts a fresh upper. The differential
// test calls Settle at random points, with no file open, so that the
// operations after it act on what the lower layers hold: copy-up,
// whiteouts, opaque directories and merged listings all get compared with
// os.
type Settler interface {
	Settle() error
}

// snapshotter is the optional interface of backends that offer snapshots.
type snapshotter interface {
	Snapshot() fs.FS
}

var fsType = reflect.TypeFor[fs.FS]()

// snapshotOf returns the Snapshot method of fsys: Snapshot() fs.FS, or a
// method Snapshot() T whose result type T implements fs.FS (such as a
// backend's own *Snapshot type).
func snapshotOf(fsys any) (func() fs.FS, bool) {
	if s, ok := fsys.(snapshotter); ok {
		return s.Snapshot, true
	}
	m := reflect.ValueOf(fsys).MethodByName("Snapshot")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 || !m.Type().Out(0).Implements(fsType) {
		return nil, false
	}
	return func() fs.FS { return m.Call(nil)[0].Interface().(fs.FS) }, true
}
