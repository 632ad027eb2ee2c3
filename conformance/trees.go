package conformance

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer"
)

// Entry is one entry of a [Tree].
type Entry struct {
	// Path is the entry's io/fs path.
	Path string
	// Mode holds the entry's type (0, fs.ModeDir or fs.ModeSymlink) and
	// permission bits. Symlinks have permission bits 0o777, as on Linux.
	Mode fs.FileMode
	// ModTime is the modification time of files and directories; symlinks
	// have none (their time cannot be set through the write interfaces).
	ModTime time.Time
	// Data is a regular file's content.
	Data []byte
	// Target is a symlink's target, a relative path.
	Target string
}

// Tree is a portable description of a populated tree: regular files with
// content, mode and modification time, directories with mode and
// modification time, and symlinks. Its Entries list every directory before
// the entries inside it. [Populate] writes a Tree into a writable layer;
// [RunReadOnly] checks that a file system holds one exactly.
type Tree struct {
	Name    string
	Entries []Entry
}

// Paths returns the paths of t's entries in order.
func (t Tree) Paths() []string {
	names := make([]string, len(t.Entries))
	for i, e := range t.Entries {
		names[i] = e.Path
	}
	return names
}

// broken returns the paths of t's symlinks that do not resolve: dangling,
// looping, or longer than 40 links.
func (t Tree) broken() map[string]bool {
	byPath := make(map[string]Entry, len(t.Entries))
	for _, e := range t.Entries {
		byPath[e.Path] = e
	}
	broken := map[string]bool{}
	for _, e := range t.Entries {
		if _, ok := resolve(byPath, e.Path); !ok {
			broken[e.Path] = true
		}
	}
	return broken
}

// resolve follows symlinks from the entry at p, as a kernel would, and
// returns the entry it ends at; ok is false for a dangling link, a loop or
// more than 40 links.
func resolve(byPath map[string]Entry, p string) (Entry, bool) {
	for hops := 0; hops <= 40; hops++ {
		e, ok := byPath[p]
		if !ok {
			return Entry{}, false
		}
		if e.Mode.Type() != fs.ModeSymlink {
			return e, true
		}
		p = path.Join(path.Dir(p), e.Target)
		if !fs.ValidPath(p) {
			return Entry{}, false
		}
	}
	return Entry{}, false
}

// Trees returns the ready-made trees, by name:
//
//   - "empty": nothing at all;
//   - "flat": a few files and directories of assorted modes;
//   - "deep": directories nested 50 deep, with files along the way;
//   - "wide": one directory of 20,000 files (2,000 with -short);
//   - "symlinks": relative links to files and directories, through
//     directories, chains, a dangling link and a loop;
//   - "unicode": names in several scripts, with spaces, combining
//     characters and a 255-byte name;
//   - "sizes": files of 0 and 1 bytes, around 64 KiB, and a large one of
//     64 MiB (1 MiB with -short);
//   - "duplicates": many files with identical contents, and files that
//     differ only in their last byte (4 KiB; 512 bytes with -short).
//
// In a test binary Trees gives the quick sizes (2,000 entries, 1 MiB)
// unless PACKFS_LONG=1 is set, as the package doc says; elsewhere, the
// full ones.
func Trees() []Tree { return trees(testing.Testing() && testsize.Short()) }

// trees is Trees at the quick sizes when short.
func trees(short bool) []Tree { return treesOf(short, 0) }

// treesOf is trees with a wide tree of wide entries, if not 0.
func treesOf(short bool, wideN int) []Tree {
	wide, large := 20000, 64<<20
	if short {
		wide, large = 2000, 1<<20
	}
	if wideN > 0 {
		wide = wideN
	}
	return []Tree{
		emptyTree(),
		flatTree(),
		deepTree(),
		wideTree(wide),
		symlinkTree(),
		unicodeTree(),
		sizesTree(large),
		duplicatesTree(short),
	}
}

// treeBuilder accumulates entries with distinct, increasing times.
type treeBuilder struct {
	t    Tree
	tick int
}

// base is the time of a tree's first entry: whole seconds, in the past.
var baseTime = time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)

func (b *treeBuilder) next() time.Time {
	b.tick++
	return baseTime.Add(time.Duration(b.tick) * time.Second)
}

func (b *treeBuilder) dir(p string, perm fs.FileMode) {
	b.t.Entries = append(b.t.Entries, Entry{Path: p, Mode: fs.ModeDir | perm, ModTime: b.next()})
}

func (b *treeBuilder) file(p string, perm fs.FileMode, data []byte) {
	b.t.Entries = append(b.t.Entries, Entry{Path: p, Mode: perm, ModTime: b.next(), Data: data})
}

func (b *treeBuilder) symlink(p, target string) {
	b.t.Entries = append(b.t.Entries, Entry{Path: p, Mode: fs.ModeSymlink | 0o777, Target: target})
}

func (b *treeBuilder) done() Tree {
	slices.SortStableFunc(b.t.Entries, func(x, y Entry) int { return comparePaths(x.Path, y.Path) })
	return b.t
}

// comparePaths orders paths so that a directory comes before what it
// contains and siblings are sorted by name, as fs.WalkDir visits them.
func comparePaths(a, b string) int {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	return slices.Compare(as, bs)
}

func emptyTree() Tree { return Tree{Name: "empty"} }

func flatTree() Tree {
	b := &treeBuilder{t: Tree{Name: "flat"}}
	b.file("README", 0o644, []byte("flat tree\n"))
	b.file("exec.sh", 0o755, []byte("#!/bin/sh\necho hi\n"))
	b.file("private", 0o600, []byte("secret"))
	b.file("readonly", 0o444, []byte("read only"))
	b.file("group", 0o640, []byte("group readable"))
	b.file("empty", 0o644, nil)
	b.dir("dir", 0o755)
	b.file("dir/a", 0o644, []byte("a"))
	b.file("dir/b", 0o644, []byte("bb"))
	b.dir("dir/sub", 0o700)
	b.file("dir/sub/c", 0o644, []byte("ccc"))
	b.dir("emptydir", 0o750)
	b.dir("readonlydir", 0o555)
	b.file("readonlydir/x", 0o644, []byte("x"))
	b.t.Entries = append(b.t.Entries,
		Entry{Path: "old", Mode: 0o644, ModTime: time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC), Data: []byte("1999")},
		Entry{Path: "future", Mode: 0o644, ModTime: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), Data: []byte("2100")},
	)
	return b.done()
}

func deepTree() Tree {
	b := &treeBuilder{t: Tree{Name: "deep"}}
	p := ""
	for i := range 50 {
		p = path.Join(p, fmt.Sprintf("d%02d", i))
		b.dir(p, 0o755)
		if i%10 == 9 {
			b.file(p+"/file", 0o644, []byte(p))
		}
	}
	b.file(p+"/bottom", 0o644, []byte("the bottom\n"))
	return b.done()
}

func wideTree(n int) Tree {
	b := &treeBuilder{t: Tree{Name: "wide"}}
	b.dir("w", 0o755)
	for i := range n {
		b.file(fmt.Sprintf("w/f%05d", i), 0o644, fmt.Appendf(nil, "file %d\n", i))
	}
	b.file("z", 0o644, []byte("after the wide directory"))
	return b.done()
}

func symlinkTree() Tree {
	b := &treeBuilder{t: Tree{Name: "symlinks"}}
	b.file("file", 0o644, []byte("target file\n"))
	b.dir("dir", 0o755)
	b.file("dir/inner", 0o644, []byte("inner\n"))
	b.dir("dir/sub", 0o755)
	b.file("dir/sub/deep", 0o600, []byte("deep\n"))
	b.symlink("to-file", "file")
	b.symlink("to-dir", "dir")
	b.symlink("to-inner", "dir/inner")
	b.symlink("through-link", "to-dir/sub/deep")
	b.symlink("dir/up", "../file")
	b.symlink("dir/sub/upup", "../../dir")
	b.symlink("dir/self-dir", ".")
	b.symlink("chain1", "chain2")
	b.symlink("chain2", "chain3")
	b.symlink("chain3", "file")
	b.symlink("dangling", "missing")
	b.symlink("dir/dangling-deep", "../nowhere/x")
	b.symlink("loop", "loop")
	return b.done()
}

func unicodeTree() Tree {
	b := &treeBuilder{t: Tree{Name: "unicode"}}
	b.file("héllo.txt", 0o644, []byte("precomposed"))
	b.file("he\u0301llo.txt", 0o644, []byte("decomposed"))
	b.dir("日本語", 0o755)
	b.file("日本語/ファイル", 0o644, []byte("こんにちは"))
	b.file("emoji-😀", 0o644, []byte("😀"))
	b.file("Ωmega", 0o644, []byte("Ω"))
	b.file("with space", 0o644, []byte("space"))
	b.file(".hidden", 0o644, []byte("dot"))
	b.file("-dash", 0o644, []byte("dash"))
	b.dir("ñ", 0o755)
	b.file("ñ/ü", 0o644, []byte("ü"))
	b.file(strings.Repeat("x", 255), 0o644, []byte("long name"))
	b.symlink("ñ/link-ü", "../日本語/ファイル")
	return b.done()
}

func sizesTree(large int) Tree {
	b := &treeBuilder{t: Tree{Name: "sizes"}}
	b.file("zero", 0o644, nil)
	b.file("one", 0o644, []byte{0})
	for _, n := range []int{4095, 4096, 4097, 65535, 65536, 65537} {
		b.file(fmt.Sprintf("n%d", n), 0o644, pseudoRandom(uint64(n), n))
	}
	b.file("large", 0o644, pseudoRandom(1, large))
	return b.done()
}

func duplicatesTree(short bool) Tree {
	b := &treeBuilder{t: Tree{Name: "duplicates"}}
	// fstest.TestFS reads each file a few bytes at a time: 4 KiB files
	// cost a backend through system calls about a second.
	size := 4096
	if short {
		size = 512
	}
	same := pseudoRandom(7, size)
	b.dir("a", 0o755)
	b.dir("b", 0o755)
	for i := range 20 {
		b.file(fmt.Sprintf("a/same%02d", i), 0o644, same)
		b.file(fmt.Sprintf("b/same%02d", i), 0o600, same)
	}
	for i := range 10 {
		b.file(fmt.Sprintf("empty%d", i), 0o644, nil)
		d := slices.Clone(same)
		d[len(d)-1] ^= byte(i + 1)
		b.file(fmt.Sprintf("near%d", i), 0o644, d)
	}
	return b.done()
}

// pseudoRandom returns n bytes determined by seed.
func pseudoRandom(seed uint64, n int) []byte {
	var key [32]byte
	for i := range 8 {
		key[i] = byte(seed >> (8 * i))
	}
	p := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(p)
	return p
}

// Populate writes tree into fsys through the write interfaces: directories,
// then files with their data, modes and times, then symlinks, and last the
// modes and times of directories, deepest first (adding entries would change
// a directory's time, and a read-only directory must be filled first).
func Populate(fsys layer.FS, tree Tree) error {
	for _, e := range tree.Entries {
		switch e.Mode.Type() {
		case fs.ModeDir:
			if err := fsys.MkdirAll(e.Path, 0o755); err != nil {
				return err
			}
		case 0:
			if err := fsys.WriteFile(e.Path, e.Data, e.Mode.Perm()); err != nil {
				return err
			}
			if err := fsys.Chmod(e.Path, e.Mode.Perm()); err != nil {
				return err
			}
			if err := fsys.Chtimes(e.Path, e.ModTime, e.ModTime); err != nil {
				return err
			}
		case fs.ModeSymlink:
			if err := fsys.Symlink(e.Target, e.Path); err != nil {
				return err
			}
		default:
			return fmt.Errorf("conformance: Populate: %s: unsupported type %v", e.Path, e.Mode.Type())
		}
	}
	for _, e := range slices.Backward(tree.Entries) {
		if e.Mode.IsDir() {
			if err := fsys.Chmod(e.Path, e.Mode.Perm()); err != nil {
				return err
			}
			if err := fsys.Chtimes(e.Path, e.ModTime, e.ModTime); err != nil {
				return err
			}
		}
	}
	return nil
}
