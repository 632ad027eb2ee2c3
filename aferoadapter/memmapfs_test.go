package aferoadapter_test

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
)

// memMapFsDiffers lists, by name, the cases where afero's MemMapFs differs
// from the OS. Each case runs on afero's OsFs over a temporary directory,
// on the adapter over mem.New() and on MemMapFs, and returns what it saw:
// the adapter must see what the OS sees. MemMapFs is expected to differ;
// if a later afero fixes a case, the test says so in its log.
var memMapFsDiffers = []struct {
	name string
	run  func(fsys afero.Fs) string
}{
	{"ParentsCreatedSilently", func(fsys afero.Fs) string {
		_, err := fsys.Create("/no/such/dir/f")
		err2 := afero.WriteFile(fsys, "/nodir/g", []byte("x"), 0o644)
		_, err3 := fsys.Stat("/no")
		return fmt.Sprint(class(err), class(err2), class(err3))
	}},
	{"MkdirWithoutParent", func(fsys afero.Fs) string {
		return class(fsys.Mkdir("/a/b", 0o755))
	}},
	{"RemoveNonEmptyDir", func(fsys afero.Fs) string {
		fsys.Mkdir("/d", 0o755)
		afero.WriteFile(fsys, "/d/f", []byte("x"), 0o644)
		err := fsys.Remove("/d")
		_, serr := fsys.Stat("/d/f")
		return class(err) + " " + class(serr)
	}},
	{"RemoveThroughFile", func(fsys afero.Fs) string {
		afero.WriteFile(fsys, "/f", []byte("x"), 0o644)
		return class(fsys.Remove("/f/x"))
	}},
	{"AppendTwoHandles", func(fsys afero.Fs) string {
		a, _ := fsys.OpenFile("/log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		b, _ := fsys.OpenFile("/log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		a.WriteString("one ")
		b.WriteString("two ")
		a.WriteString("three")
		a.Close()
		b.Close()
		data, err := afero.ReadFile(fsys, "/log")
		return string(data) + " " + class(err)
	}},
	{"WriteAtKeepsOffset", func(fsys afero.Fs) string {
		f, _ := fsys.Create("/f")
		f.WriteString("hello")
		f.WriteAt([]byte("XY"), 0)
		f.WriteString("!")
		off, _ := f.Seek(0, io.SeekCurrent)
		f.Close()
		data, _ := afero.ReadFile(fsys, "/f")
		return fmt.Sprint(string(data), off)
	}},
	{"WriteAtInAppendMode", func(fsys afero.Fs) string {
		f, _ := fsys.OpenFile("/f", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		defer f.Close()
		_, err := f.WriteAt([]byte("x"), 0)
		return fmt.Sprint(err != nil)
	}},
	{"Symlinks", func(fsys afero.Fs) string {
		afero.WriteFile(fsys, "/target", []byte("data"), 0o644)
		ln, ok := fsys.(afero.Linker)
		if !ok {
			return "no afero.Linker"
		}
		err := ln.SymlinkIfPossible("target", "/link")
		target, err2 := fsys.(afero.LinkReader).ReadlinkIfPossible("/link")
		fi, lstat, err3 := fsys.(afero.Lstater).LstatIfPossible("/link")
		data, err4 := afero.ReadFile(fsys, "/link")
		mode := ""
		if fi != nil {
			mode = fi.Mode().Type().String()
		}
		return fmt.Sprint(class(err), target, class(err2), mode, lstat, class(err3), string(data), class(err4))
	}},
	{"ReaddirOnFile", func(fsys afero.Fs) string {
		afero.WriteFile(fsys, "/f", []byte("x"), 0o644)
		f, _ := fsys.Open("/f")
		defer f.Close()
		_, err := f.Readdir(1)
		_, err2 := f.Readdirnames(-1)
		return class(err) + " " + class(err2)
	}},
	{"ReaddirEOFRules", func(fsys afero.Fs) string {
		fsys.Mkdir("/d", 0o755)
		for _, n := range []string{"a", "b", "c"} {
			afero.WriteFile(fsys, "/d/"+n, nil, 0o644)
		}
		f, _ := fsys.Open("/d")
		defer f.Close()
		var out []string
		for range 3 {
			list, err := f.Readdir(2)
			out = append(out, fmt.Sprint(len(list), class(err), list != nil))
		}
		list, err := f.Readdir(-1)
		out = append(out, fmt.Sprint(len(list), class(err), list != nil))
		names, err := f.Readdirnames(0)
		out = append(out, fmt.Sprint(len(names), class(err), names != nil))
		f.Close()
		_, err = f.Readdir(1)
		out = append(out, "closed "+class(err))
		return strings.Join(out, "; ")
	}},
	{"MkdirAllOverFile", func(fsys afero.Fs) string {
		afero.WriteFile(fsys, "/f", []byte("x"), 0o644)
		return class(fsys.MkdirAll("/f", 0o755)) + " " + class(fsys.MkdirAll("/f/g", 0o755))
	}},
	{"CreateOverDir", func(fsys afero.Fs) string {
		fsys.Mkdir("/d", 0o755)
		_, err := fsys.Create("/d")
		fi, _ := fsys.Stat("/d")
		return class(err) + " " + fmt.Sprint(fi != nil && fi.IsDir())
	}},
	{"OpenDirForWriting", func(fsys afero.Fs) string {
		fsys.Mkdir("/d", 0o755)
		_, err := fsys.OpenFile("/d", os.O_WRONLY, 0)
		return class(err)
	}},
	{"ReadDirectoryHandle", func(fsys afero.Fs) string {
		fsys.Mkdir("/d", 0o755)
		f, _ := fsys.Open("/d")
		defer f.Close()
		_, err := f.Read(make([]byte, 8))
		return class(err)
	}},
	{"WriteReadOnlyHandle", func(fsys afero.Fs) string {
		afero.WriteFile(fsys, "/f", []byte("x"), 0o644)
		f, _ := fsys.Open("/f")
		defer f.Close()
		_, err := f.Write([]byte("y"))
		return class(err) + " " + class(f.Truncate(0))
	}},
	{"ClosedHandle", func(fsys afero.Fs) string {
		f, _ := fsys.Create("/f")
		f.Close()
		_, err := f.Read(make([]byte, 1))
		_, err2 := f.Write([]byte("x"))
		_, err3 := f.Stat()
		return class(err) + " " + class(err2) + " " + class(err3) + " " + class(f.Close())
	}},
	{"SeekNegative", func(fsys afero.Fs) string {
		f, _ := fsys.Create("/f")
		defer f.Close()
		_, err := f.Seek(-1, io.SeekStart)
		return class(err)
	}},
	{"RenameFileOntoDir", func(fsys afero.Fs) string {
		afero.WriteFile(fsys, "/f", []byte("x"), 0o644)
		fsys.Mkdir("/d", 0o755)
		err := fsys.Rename("/f", "/d")
		fi, _ := fsys.Stat("/d")
		return class(err) + " " + fmt.Sprint(fi != nil && fi.IsDir())
	}},
	{"RenameIntoMissingDir", func(fsys afero.Fs) string {
		afero.WriteFile(fsys, "/f", []byte("x"), 0o644)
		return class(fsys.Rename("/f", "/no/g"))
	}},
	{"RenameDirOverNonEmptyDir", func(fsys afero.Fs) string {
		fsys.MkdirAll("/a", 0o755)
		fsys.MkdirAll("/b/c", 0o755)
		err := fsys.Rename("/a", "/b")
		_, serr := fsys.Stat("/b/c")
		return class(err) + " " + class(serr)
	}},
	{"ChtimesZeroKeepsTime", func(fsys afero.Fs) string {
		afero.WriteFile(fsys, "/f", []byte("x"), 0o644)
		when := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
		fsys.Chtimes("/f", when, when)
		fsys.Chtimes("/f", when, time.Time{})
		fi, _ := fsys.Stat("/f")
		return fi.ModTime().UTC().String()
	}},
	{"ChmodKeepsType", func(fsys afero.Fs) string {
		fsys.Mkdir("/d", 0o755)
		fsys.Chmod("/d", 0o700)
		fi, _ := fsys.Stat("/d")
		fsys.Create("/f")
		fi2, _ := fsys.Stat("/f")
		return fi.Mode().String() + " " + fi2.Mode().String()
	}},
	{"RemoveAllThroughFile", func(fsys afero.Fs) string {
		afero.WriteFile(fsys, "/f", []byte("x"), 0o644)
		return class(fsys.RemoveAll("/f/x"))
	}},
	{"OpenTruncReadOnly", func(fsys afero.Fs) string {
		afero.WriteFile(fsys, "/f", []byte("data"), 0o644)
		f, err := fsys.OpenFile("/f", os.O_RDONLY|os.O_TRUNC, 0)
		if f != nil {
			f.Close()
		}
		data, _ := afero.ReadFile(fsys, "/f")
		return class(err) + " " + string(data)
	}},
	{"DirSize", func(fsys afero.Fs) string {
		fsys.Mkdir("/d", 0o755)
		fi, _ := fsys.Stat("/d")
		return fmt.Sprint(fi.Size() == 42)
	}},
}

// TestMemMapFsDiffers runs each case of memMapFsDiffers: the adapter must
// behave as the OS does where MemMapFs does not.
func TestMemMapFsDiffers(t *testing.T) {
	for _, c := range memMapFsDiffers {
		t.Run(c.name, func(t *testing.T) {
			want := c.run(osFs(t))
			if got := c.run(adapterFs(t)); got != want {
				t.Errorf("adapter: %q\nOS:      %q", got, want)
			}
			if got := c.run(afero.NewMemMapFs()); got == want {
				t.Logf("MemMapFs now agrees with the OS: %q", got)
			} else {
				t.Logf("OS and adapter: %q; MemMapFs: %q", want, got)
			}
		})
	}
}
