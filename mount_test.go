package packfs_test

import (
	"errors"
	"io/fs"
	"slices"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
)

// mounted returns a union with directories app, app-secret and data, and
// a writable layer holding "index.html" mounted at app.
func mounted(t *testing.T) (*packfs.FS, *mem.FS) {
	t.Helper()
	u := packfs.New(mem.New())
	for _, d := range []string{"app", "app-secret", "data"} {
		if err := u.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	u.WriteFile("app-secret/key", []byte("secret"), 0o600)
	u.WriteFile("app/hidden", []byte("under the mount"), 0o644)
	site := mem.New()
	site.WriteFile("index.html", []byte("<html>"), 0o644)
	if err := u.Mount("app", site); err != nil {
		t.Fatal(err)
	}
	return u, site
}

func TestMountPrefixBoundary(t *testing.T) {
	u, _ := mounted(t)
	wantContent(t, u, "app/index.html", "<html>")
	wantMissing(t, u, "app/hidden") // covered by the mount
	// afero's BasePathFs issue #513: "app" must not match "app-secret".
	wantContent(t, u, "app-secret/key", "secret")
	if got := names(t, u, "app"); !slices.Equal(got, []string{"index.html"}) {
		t.Errorf("ReadDir(app) = %v", got)
	}
	if got := names(t, u, "."); !slices.Equal(got, []string{"app", "app-secret", "data"}) {
		t.Errorf("ReadDir(.) = %v: the mount point must show", got)
	}
	if err := fstest.TestFS(u, "app/index.html", "app-secret/key"); err != nil {
		t.Fatal(err)
	}
}

func TestMountLongestPrefixWins(t *testing.T) {
	u, site := mounted(t)
	site.Mkdir("static", 0o755)
	inner := mem.New()
	inner.WriteFile("logo.png", []byte("png"), 0o644)
	if err := u.Mount("app/static", inner); err != nil {
		t.Fatal(err)
	}
	wantContent(t, u, "app/static/logo.png", "png")
	wantContent(t, u, "app/index.html", "<html>")
	if err := u.Unmount("app/static"); err != nil {
		t.Fatal(err)
	}
	wantMissing(t, u, "app/static/logo.png")
	if err := u.Unmount("app"); err != nil {
		t.Fatal(err)
	}
	wantContent(t, u, "app/hidden", "under the mount")
	if err := u.Unmount("app"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Unmount of a non-mount: %v, want EINVAL", err)
	}
}

func TestMountWrites(t *testing.T) {
	u, site := mounted(t)
	if err := u.WriteFile("app/new.html", []byte("n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantContent(t, site, "new.html", "n") // the write went to the mount
	if err := u.Rename("app/new.html", "app/renamed.html"); err != nil {
		t.Fatal(err)
	}
	if err := u.Rename("app/renamed.html", "data/x"); !errors.Is(err, syscall.EXDEV) {
		t.Errorf("rename across mounts: %v, want EXDEV", err)
	}
	for name, err := range map[string]error{
		"Remove(app)":    u.Remove("app"),
		"RemoveAll(app)": u.RemoveAll("app"),
		"Rename(app)":    u.Rename("app", "other"),
	} {
		if !errors.Is(err, syscall.EBUSY) {
			t.Errorf("%s: %v, want EBUSY", name, err)
		}
	}
	if err := u.Mount("app", mem.New()); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("mount over a mount: %v, want EBUSY", err)
	}
	if err := u.Mount("missing", mem.New()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("mount on a missing directory: %v", err)
	}
	// A read-only mount refuses writes as a read-only mount does.
	ro := fstest.MapFS{"f": {Data: []byte("x")}}
	if err := u.Mount("data", ro); err != nil {
		t.Fatal(err)
	}
	wantContent(t, u, "data/f", "x")
	if err := u.WriteFile("data/g", nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("write into a read-only mount: %v, want EROFS", err)
	}
	if err := u.Rename("data/f", "data/g"); !errors.Is(err, syscall.EROFS) {
		t.Errorf("rename inside a read-only mount: %v, want EROFS", err)
	}
}

func TestSnapshotKeepsMounts(t *testing.T) {
	u, site := mounted(t)
	snap, err := u.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	site.WriteFile("index.html", []byte("changed"), 0o644)
	wantContent(t, snap, "app/index.html", "<html>")
	wantContent(t, u, "app/index.html", "changed")
}
