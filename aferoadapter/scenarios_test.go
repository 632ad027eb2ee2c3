package aferoadapter_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/afero"
)

// scenarios are afero programs of the kind applications run. Each runs on
// afero's OsFs over a temporary directory and on the adapter over
// mem.New(), and must report the same: error classes (errors.Is), data,
// and the final tree.
var scenarios = []struct {
	name string
	run  func(fsys afero.Fs) []string
}{
	{"PathSpellings", func(fsys afero.Fs) []string {
		var out []string
		note := func(what string, err error) { out = append(out, what+": "+class(err)) }
		note("MkdirAll /a/b", fsys.MkdirAll("/a/b", 0o755))
		note("WriteFile a/b/f", afero.WriteFile(fsys, "a/b/f", []byte("one"), 0o644))
		for _, p := range []string{"/a/b/f", "a/b/f", "./a/b/f", "/a/./b//f", "a/x/../b/f", "//a/b/f", "a/b/f/"} {
			data, err := afero.ReadFile(fsys, p)
			note("ReadFile "+p+" "+string(data), err)
		}
		for _, p := range []string{"", "/", ".", "./", "/a/", "a/b/.."} {
			fi, err := fsys.Stat(p)
			isDir := fi != nil && fi.IsDir()
			note(fmt.Sprint("Stat ", p, " ", isDir), err)
		}
		return out
	}},
	{"ConfigWriteRead", func(fsys afero.Fs) []string {
		var out []string
		note := func(what string, err error) { out = append(out, what+": "+class(err)) }
		note("MkdirAll", fsys.MkdirAll("/etc/app", 0o755))
		note("WriteFile", afero.WriteFile(fsys, "/etc/app/config.yaml", []byte("debug: true\n"), 0o644))
		ok, err := afero.Exists(fsys, "/etc/app/config.yaml")
		note(fmt.Sprint("Exists ", ok), err)
		ok, err = afero.DirExists(fsys, "/etc/app")
		note(fmt.Sprint("DirExists ", ok), err)
		ok, err = afero.IsDir(fsys, "/etc/app/config.yaml")
		note(fmt.Sprint("IsDir ", ok), err)
		ok, err = afero.IsEmpty(fsys, "/etc/app")
		note(fmt.Sprint("IsEmpty ", ok), err)
		ok, err = afero.FileContainsBytes(fsys, "/etc/app/config.yaml", []byte("debug"))
		note(fmt.Sprint("FileContainsBytes ", ok), err)
		note("SafeWriteReader new", afero.SafeWriteReader(fsys, "/var/lib/app/state", strings.NewReader("s1")))
		err = afero.SafeWriteReader(fsys, "/var/lib/app/state", strings.NewReader("s2"))
		out = append(out, fmt.Sprint("SafeWriteReader existing fails: ", err != nil))
		data, err := afero.ReadFile(fsys, "/var/lib/app/state")
		note("ReadFile "+string(data), err)
		return out
	}},
	{"WalkAndGlob", func(fsys afero.Fs) []string {
		var out []string
		for _, p := range []string{"/src/a.go", "/src/b.go", "/src/sub/c.go", "/src/sub/d.txt", "/docs/readme.md"} {
			fsys.MkdirAll(filepath.Dir(p), 0o755)
			afero.WriteFile(fsys, p, []byte(p), 0o644)
		}
		fsys.(afero.Linker).SymlinkIfPossible("sub", "/src/link")
		err := afero.Walk(fsys, "/", func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				out = append(out, "walk error "+p+" "+class(err))
				return nil
			}
			if p != "/" && fi.Name() == "docs" {
				return filepath.SkipDir
			}
			out = append(out, p+" "+fi.Mode().String())
			return nil
		})
		out = append(out, "Walk: "+class(err))
		for _, pat := range []string{"/src/*.go", "/src/*/*.go", "/*/sub", "/nothing/*"} {
			m, err := afero.Glob(fsys, pat)
			out = append(out, fmt.Sprint("Glob ", pat, " ", m, " ", class(err)))
		}
		list, err := afero.ReadDir(fsys, "/src")
		var names []string
		for _, fi := range list {
			names = append(names, fi.Name())
		}
		out = append(out, fmt.Sprint("ReadDir ", names, " ", class(err)))
		return out
	}},
	{"TempFilesAndDirs", func(fsys afero.Fs) []string {
		var out []string
		fsys.MkdirAll("/tmp", 0o777)
		dir, err := afero.TempDir(fsys, "/tmp", "work-")
		out = append(out, "TempDir "+class(err))
		f, err := afero.TempFile(fsys, dir, "data-*.bin")
		out = append(out, "TempFile "+class(err))
		if err == nil {
			f.WriteString("payload")
			st, _ := f.Stat()
			out = append(out, fmt.Sprint("size ", st.Size(), " prefix ", strings.HasPrefix(f.Name(), dir+"/data-")))
			f.Close()
			data, _ := afero.ReadFile(fsys, f.Name())
			out = append(out, string(data))
			out = append(out, "Remove "+class(fsys.Remove(f.Name())))
		}
		out = append(out, "RemoveAll "+class(fsys.RemoveAll(dir)))
		return out
	}},
	{"HandlesAndOffsets", func(fsys afero.Fs) []string {
		var out []string
		f, err := fsys.OpenFile("/f", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
		out = append(out, "OpenFile "+class(err))
		_, err = fsys.OpenFile("/f", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
		out = append(out, "OpenFile excl again "+class(err))
		if f == nil { // the second run over a lower holding /f
			f, err = fsys.OpenFile("/f", os.O_RDWR, 0)
			out = append(out, "OpenFile existing "+class(err))
		}
		f.WriteString("0123456789")
		f.Seek(2, io.SeekStart)
		buf := make([]byte, 3)
		n, err := f.Read(buf)
		out = append(out, fmt.Sprint("Read ", n, string(buf), class(err)))
		n, err = f.ReadAt(buf, 8)
		out = append(out, fmt.Sprint("ReadAt ", n, string(buf[:n]), class(err)))
		off, _ := f.Seek(0, io.SeekCurrent)
		out = append(out, fmt.Sprint("offset ", off))
		f.Truncate(4)
		f.Seek(8, io.SeekStart)
		f.WriteString("x")
		f.Sync()
		fi, _ := f.Stat()
		out = append(out, fmt.Sprint("size ", fi.Size(), " mode ", fi.Mode(), " name ", fi.Name(), " handle ", f.Name()))
		f.Close()
		data, _ := afero.ReadFile(fsys, "/f")
		out = append(out, fmt.Sprintf("%q", data))
		g, _ := fsys.OpenFile("/f", os.O_WRONLY|os.O_TRUNC, 0)
		g.Write([]byte("new"))
		g.Close()
		data, _ = afero.ReadFile(fsys, "/f")
		out = append(out, string(data))
		return out
	}},
	{"RenameAndRemove", func(fsys afero.Fs) []string {
		var out []string
		note := func(what string, err error) { out = append(out, what+": "+class(err)+" "+errOp(err)) }
		fsys.MkdirAll("/a/b", 0o755)
		afero.WriteFile(fsys, "/a/b/f", []byte("f"), 0o644)
		afero.WriteFile(fsys, "/g", []byte("g"), 0o644)
		note("Rename dir", fsys.Rename("/a/b", "/c"))
		note("Rename file over file", fsys.Rename("/g", "/c/f"))
		note("Rename missing", fsys.Rename("/nope", "/x"))
		note("Rename into itself", fsys.Rename("/a", "/a/z"))
		note("Remove non-empty", fsys.Remove("/c"))
		note("Remove file", fsys.Remove("/c/f"))
		note("Remove empty", fsys.Remove("/c"))
		note("Remove missing", fsys.Remove("/c"))
		note("RemoveAll missing", fsys.RemoveAll("/c"))
		note("RemoveAll tree", fsys.RemoveAll("/a"))
		return out
	}},
	{"Symlinks", func(fsys afero.Fs) []string {
		var out []string
		note := func(what string, err error) { out = append(out, what+": "+class(err)) }
		fsys.MkdirAll("/real/dir", 0o755)
		afero.WriteFile(fsys, "/real/dir/file", []byte("content"), 0o644)
		ln := fsys.(afero.Symlinker)
		note("symlink dir", ln.SymlinkIfPossible("real/dir", "/short"))
		note("symlink dangling", ln.SymlinkIfPossible("missing", "/dangling"))
		note("symlink exists", ln.SymlinkIfPossible("x", "/short"))
		data, err := afero.ReadFile(fsys, "/short/file")
		note("read through "+string(data), err)
		fi, lst, err := ln.LstatIfPossible("/short")
		note(fmt.Sprint("lstat ", fi.Mode().Type(), lst), err)
		fi, err = fsys.Stat("/short")
		note(fmt.Sprint("stat ", fi.IsDir()), err)
		_, err = fsys.Stat("/dangling")
		note("stat dangling", err)
		target, err := ln.ReadlinkIfPossible("/short")
		note("readlink "+target, err)
		_, err = ln.ReadlinkIfPossible("/real")
		note("readlink dir", err)
		note("remove link", fsys.Remove("/short"))
		_, err = fsys.Stat("/real/dir/file")
		note("target kept", err)
		return out
	}},
	{"ReaddirPaging", func(fsys afero.Fs) []string {
		var out []string
		fsys.Mkdir("/d", 0o755)
		for i := range 7 {
			afero.WriteFile(fsys, fmt.Sprintf("/d/f%d", i), nil, 0o644)
		}
		f, _ := fsys.Open("/d")
		var all []string
		for {
			names, err := f.Readdirnames(3)
			out = append(out, fmt.Sprint(len(names), " ", class(err)))
			all = append(all, names...)
			if err != nil {
				break
			}
		}
		list, err := f.Readdir(-1)
		out = append(out, fmt.Sprint("after EOF, Readdir(-1): ", len(list), " ", class(err)))
		f.Close()
		slices.Sort(all)
		out = append(out, strings.Join(all, ","))
		return out
	}},
	{"BigFile", func(fsys afero.Fs) []string {
		big := bytes.Repeat([]byte("0123456789abcdef"), 1<<14)
		f, _ := fsys.Create("/big")
		for i := 0; i < len(big); i += 1000 {
			f.Write(big[i:min(i+1000, len(big))])
		}
		f.WriteAt([]byte("HOLE"), 1<<20)
		f.Close()
		data, err := afero.ReadFile(fsys, "/big")
		ok, _ := afero.FileContainsBytes(fsys, "/big", []byte("fHOLE"))
		return []string{fmt.Sprint(len(data), " ", bytes.Equal(data[:len(big)], big), " ", class(err), " ", ok)}
	}},
}

// TestScenarios runs every scenario on the OS and on the adapter: over
// mem.New(), over an empty union, and over a union whose lower already
// holds what the scenario makes (it ran once on a mem layer, snapshotted
// below a fresh upper; the OS side runs it twice), so that the second run
// acts on lower files: copy-up, whiteouts, opaque directories.
func TestScenarios(t *testing.T) {
	for _, s := range scenarios {
		for _, b := range []struct {
			name  string
			make  func(t *testing.T) afero.Fs
			setup bool
		}{
			{"mem", func(t *testing.T) afero.Fs { return adapterFs(t) }, false},
			{"union", func(t *testing.T) afero.Fs { return unionFs(t, nil) }, false},
			{"union-lower", func(t *testing.T) afero.Fs {
				return unionFs(t, func(fsys afero.Fs) { s.run(fsys) })
			}, true},
		} {
			t.Run(s.name+"/"+b.name, func(t *testing.T) {
				host, back := osFs(t), b.make(t)
				if b.setup {
					s.run(host)
				}
				want, got := s.run(host), s.run(back)
				if !slices.Equal(want, got) {
					t.Errorf("results differ\nOS:      %q\nadapter: %q", want, got)
				}
				if h, b := tree(t, host), tree(t, back); !slices.Equal(h, b) {
					t.Errorf("trees differ\nOS:      %q\nadapter: %q", h, b)
				}
			})
		}
	}
}
