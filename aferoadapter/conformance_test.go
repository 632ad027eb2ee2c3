package aferoadapter_test

import (
	"flag"
	"os"
	"testing"

	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer"
	"github.com/spf13/afero"
)

// verbatimLinks is an afero.BasePathFs over the OS whose symlinks keep
// their targets as given, as os.Symlink does. afero.BasePathFs itself runs
// every target through RealPath: "x" becomes "/base/x" (wrong from a link
// in a subdirectory) and "../x" climbs out of the base and fails with
// ErrNotExist. With this fix in the backend the suite passes whole, which
// shows the adapter is right; TestConformanceLayerBasePathFs runs plain
// BasePathFs with its symlink tests skipped.
type verbatimLinks struct {
	*afero.BasePathFs
}

func (v verbatimLinks) SymlinkIfPossible(oldname, newname string) error {
	p, err := v.RealPath(newname)
	if err != nil {
		return &os.LinkError{Op: "symlink", Old: oldname, New: newname, Err: err}
	}
	return os.Symlink(oldname, p)
}

func (v verbatimLinks) ReadlinkIfPossible(name string) (string, error) {
	p, err := v.RealPath(name)
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: name, Err: err}
	}
	return os.Readlink(p)
}

func newOsLayer(t *testing.T, verbatim bool) *aferoadapter.LayerFS {
	base := afero.NewBasePathFs(afero.NewOsFs(), tempDir(t)).(*afero.BasePathFs)
	if verbatim {
		return aferoadapter.Layer(verbatimLinks{base})
	}
	return aferoadapter.Layer(base)
}

// TestConformanceLayerOsFs runs the whole suite over the OS through
// afero.BasePathFs (with symlink targets kept verbatim, see
// verbatimLinks), presented as a layer.
// TestFS runs on its own (TestConformanceLayerOsFsTestFS): its tree of
// thousands of entries takes 40 s through afero on tmpfs.
func TestConformanceLayerOsFs(t *testing.T) {
	conformance.Run(t, func(t *testing.T) layer.FS {
		return newOsLayer(t, true)
	},
		conformance.WithSeeds(seeds(50, 300)),
		conformance.Skip("TestFS", "run by TestConformanceLayerOsFsTestFS, not under -short or -race: it takes 40 s"))
}

// TestConformanceLayerOsFsTestFS runs the suite's TestFS, which writes
// each tree of conformance.Trees through the layer and checks it with
// fstest.TestFS, over the OS through afero.
func TestConformanceLayerOsFsTestFS(t *testing.T) {
	if testsize.Short() || raceEnabled {
		t.Skip("40 s; skipped under -short and -race")
	}
	conformance.Tests["TestFS"](t, func(t *testing.T) layer.FS { return newOsLayer(t, true) })
}

// TestConformanceLayerBasePathFs runs the suite over plain
// afero.BasePathFs over the OS, skipping what depends on symlink targets,
// which BasePathFs rewrites (see verbatimLinks).
func TestConformanceLayerBasePathFs(t *testing.T) {
	const why = "afero.BasePathFs rewrites symlink targets into absolute host paths and refuses targets with .."
	var opts []conformance.Option
	for _, name := range []string{"Differential", "NameLimits", "RemoveAll", "RenameDir", "Symlink", "SymlinkChain", "SymlinkLoop", "SymlinkThrough", "TestFS"} {
		opts = append(opts, conformance.Skip(name, why))
	}
	conformance.Run(t, func(t *testing.T) layer.FS {
		return newOsLayer(t, false)
	}, opts...)
}

var flagMemMap = flag.Bool("aferoadapter.memmapfs", false, "run the conformance suite over Layer(afero.NewMemMapFs()), which fails: MemMapFs differs from the OS")

// TestConformanceLayerMemMapFs runs the suite over afero's MemMapFs, with
// -aferoadapter.memmapfs only: it fails, because MemMapFs differs from the
// OS (see the package documentation and TestMemMapFsDiffers). It shows
// that Layer itself adds nothing wrong: every failure is one of MemMapFs's.
func TestConformanceLayerMemMapFs(t *testing.T) {
	if !*flagMemMap {
		t.Skip("MemMapFs differs from the OS; run with -aferoadapter.memmapfs to see how")
	}
	conformance.Run(t, func(t *testing.T) layer.FS {
		return aferoadapter.Layer(afero.NewMemMapFs())
	},
		conformance.Skip("RenameIntoSelf", "MemMapFs panics: parent of /d/e/f is nil"),
		conformance.Skip("Differential", "MemMapFs panics on renames into a descendant, and leaves its lock held"))
}
