package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/remote"
)

// statusError makes run exit with code, printing err unless it is nil:
// diff exits 1 on a difference without a message, and 2 on trouble.
type statusError struct {
	code int
	err  error
}

func (e *statusError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *statusError) Unwrap() error { return e.err }

// exitStatus reports a command's error on stderr and returns the exit
// status: 1, or what a statusError says.
func exitStatus(name string, err error, stderr io.Writer) int {
	code := 1
	if se, ok := errors.AsType[*statusError](err); ok {
		code, err = se.code, se.err
	}
	if err != nil {
		fmt.Fprintf(stderr, "packfs %s: %s\n", name, printable(err.Error()))
	}
	return code
}

var diffIgnoreTimes bool

func diffFlags(fl *flag.FlagSet) {
	fl.BoolVar(&diffIgnoreTimes, "ignore-times", false, "do not compare modification times")
}

// cmdDiff lists what differs between A and B, one line each, sorted by
// path:
//
//	added PATH                 B has it, A does not
//	removed PATH               A has it, B does not
//	type PATH: file -> directory
//	mode PATH: -rw-r--r-- -> -rwxr-xr-x
//	size PATH: 5 -> 7          (the contents differ too, unsaid)
//	content PATH               same size, other bytes
//	target PATH: a -> b        symlinks
//	mtime PATH: T -> T'        UTC, nanoseconds
//
// Everything below an added or removed directory is listed. Exit status
// as diff(1): 0 same, 1 different, 2 trouble.
func cmdDiff(_ *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	trouble := func(err error) error { return &statusError{code: 2, err: err} }
	a, closeA, err := openPackOrDir(args[0])
	if err != nil {
		return trouble(err)
	}
	defer closeA()
	b, closeB, err := openPackOrDir(args[1])
	if err != nil {
		return trouble(err)
	}
	defer closeB()
	d := &differ{a: a, b: b, aName: args[0], bName: args[1], times: !diffIgnoreTimes, stderr: stderr}
	if err := d.compare("."); err != nil {
		return trouble(err)
	}
	slices.SortStableFunc(d.lines, func(x, y diffLine) int { return strings.Compare(x.path, y.path) })
	var buf bytes.Buffer
	for _, l := range d.lines {
		fmt.Fprintf(&buf, "%s %s%s\n", l.kind, diffQuote(l.path), l.detail)
	}
	if _, err := stdout.Write(buf.Bytes()); err != nil {
		return trouble(err)
	}
	switch {
	case d.skipped:
		return &statusError{code: 2}
	case len(d.lines) > 0:
		return &statusError{code: 1}
	}
	return nil
}

// errNameNotUTF8 is why a host name that is not UTF-8 cannot be compared or
// imported: io/fs paths are UTF-8.
var errNameNotUTF8 = errors.New("name is not valid UTF-8, which io/fs paths must be")

// checkUTF8Name refuses a name io/fs cannot hold, saying which and why.
func checkUTF8Name(p string) error {
	if utf8.ValidString(p) {
		return nil
	}
	return &fs.PathError{Op: "open", Path: strconv.Quote(p), Err: errNameNotUTF8}
}

type diffLine struct{ kind, path, detail string }

type differ struct {
	a, b         fs.FS
	aName, bName string // as given, to say which tree an error is in
	times        bool
	lines        []diffLine
	stderr       io.Writer
	skipped      bool // a name was left out: diff exits 2, as diff(1) on trouble
	bufA, bufB   []byte
}

// skip reports an entry of fsys left out of the comparison.
func (d *differ) skip(fsys fs.FS, err error) {
	fmt.Fprintf(d.stderr, "packfs diff: %v (skipped)\n", d.in(fsys, err))
	d.skipped = true
}

// in says that err happened in the tree fsys.
func (d *differ) in(fsys fs.FS, err error) error {
	name := d.aName
	if fsys == d.b {
		name = d.bName
	}
	return fmt.Errorf("%s: %w", name, err)
}

func (d *differ) add(kind, p, detail string) {
	d.lines = append(d.lines, diffLine{kind, p, detail})
}

// compare compares the entry p of both trees, which both have.
func (d *differ) compare(p string) error {
	ai, err := fs.Lstat(d.a, p)
	if err != nil {
		return d.in(d.a, err)
	}
	bi, err := fs.Lstat(d.b, p)
	if err != nil {
		return d.in(d.b, err)
	}
	am, bm := ai.Mode(), bi.Mode()
	if ak, bk := diffKind(ai), diffKind(bi); ak != bk {
		d.add("type", p, ": "+ak+" -> "+bk)
		if am.IsDir() {
			return d.all("removed", d.a, p, false)
		}
		if bm.IsDir() {
			return d.all("added", d.b, p, false)
		}
		return nil
	}
	if am&keptModeBits != bm&keptModeBits {
		d.add("mode", p, ": "+(am&keptModeBits).String()+" -> "+(bm&keptModeBits).String())
	}
	switch am.Type() {
	case 0:
		if ai.Size() != bi.Size() {
			d.add("size", p, fmt.Sprintf(": %d -> %d", ai.Size(), bi.Size()))
		} else if same, err := d.sameContent(p); err != nil {
			return err
		} else if !same {
			d.add("content", p, "")
		}
	case fs.ModeSymlink:
		at, err := fs.ReadLink(d.a, p)
		if err != nil {
			return d.in(d.a, err)
		}
		bt, err := fs.ReadLink(d.b, p)
		if err != nil {
			return d.in(d.b, err)
		}
		if at != bt {
			d.add("target", p, ": "+diffQuote(at)+" -> "+diffQuote(bt))
		}
	}
	if d.times && !ai.ModTime().Equal(bi.ModTime()) {
		d.add("mtime", p, ": "+diffTime(ai.ModTime())+" -> "+diffTime(bi.ModTime()))
	}
	if !am.IsDir() {
		return nil
	}
	ae, err := fs.ReadDir(d.a, p)
	if err != nil {
		return d.in(d.a, err)
	}
	be, err := fs.ReadDir(d.b, p)
	if err != nil {
		return d.in(d.b, err)
	}
	// Both listings are sorted by name: merge them.
	for len(ae) > 0 || len(be) > 0 {
		switch {
		case len(ae) > 0 && checkUTF8Name(ae[0].Name()) != nil:
			d.skip(d.a, checkUTF8Name(path.Join(p, ae[0].Name())))
			ae = ae[1:]
		case len(be) > 0 && checkUTF8Name(be[0].Name()) != nil:
			d.skip(d.b, checkUTF8Name(path.Join(p, be[0].Name())))
			be = be[1:]
		case len(be) == 0 || len(ae) > 0 && ae[0].Name() < be[0].Name():
			if err := d.all("removed", d.a, path.Join(p, ae[0].Name()), true); err != nil {
				return err
			}
			ae = ae[1:]
		case len(ae) == 0 || be[0].Name() < ae[0].Name():
			if err := d.all("added", d.b, path.Join(p, be[0].Name()), true); err != nil {
				return err
			}
			be = be[1:]
		default:
			if err := d.compare(path.Join(p, ae[0].Name())); err != nil {
				return err
			}
			ae, be = ae[1:], be[1:]
		}
	}
	return nil
}

// all lists p (if self) and everything below it in fsys as kind.
func (d *differ) all(kind string, fsys fs.FS, p string, self bool) error {
	return fs.WalkDir(fsys, p, func(q string, e fs.DirEntry, err error) error {
		if nerr := checkUTF8Name(q); nerr != nil {
			d.skip(fsys, nerr)
			if e != nil && e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if err != nil {
			return d.in(fsys, err)
		}
		if q != p || self {
			d.add(kind, q, "")
		}
		return nil
	})
}

// sameContent compares the file p of both trees, a block at a time.
func (d *differ) sameContent(p string) (bool, error) {
	fa, err := d.a.Open(p)
	if err != nil {
		return false, d.in(d.a, err)
	}
	defer fa.Close()
	fb, err := d.b.Open(p)
	if err != nil {
		return false, d.in(d.b, err)
	}
	defer fb.Close()
	if d.bufA == nil {
		d.bufA, d.bufB = make([]byte, 64<<10), make([]byte, 64<<10)
	}
	ba, bb := d.bufA, d.bufB
	for {
		na, erra := io.ReadFull(fa, ba)
		nb, errb := io.ReadFull(fb, bb)
		aEnd := erra == io.EOF || erra == io.ErrUnexpectedEOF
		bEnd := errb == io.EOF || errb == io.ErrUnexpectedEOF
		switch {
		case erra != nil && !aEnd:
			return false, d.in(d.a, readError(p, erra))
		case errb != nil && !bEnd:
			return false, d.in(d.b, readError(p, errb))
		case !bytes.Equal(ba[:na], bb[:nb]):
			return false, nil
		case aEnd || bEnd:
			return aEnd && bEnd, nil
		}
	}
}

// readError names the file a read failed in, once.
func readError(p string, err error) error {
	if _, ok := errors.AsType[*fs.PathError](err); ok {
		return err
	}
	return &fs.PathError{Op: "read", Path: p, Err: err}
}

func diffKind(fi fs.FileInfo) string {
	if fi.Mode().Type() == 0 {
		return "file"
	}
	return entryKindName(fi)
}

func diffTime(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format("2006-01-02 15:04:05.999999999 UTC")
}

// diffQuote quotes a name that holds spaces, control characters or
// invalid UTF-8, so that each line stays one line and parses back.
func diffQuote(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool {
		return r == utf8.RuneError || r == '"' || unicode.IsSpace(r) || !unicode.IsPrint(r)
	}) {
		return strconv.Quote(s)
	}
	return s
}

// openPackOrDir opens name as a pack file or a host directory, read-only.
func openPackOrDir(name string) (fs.FS, func() error, error) {
	if remote.IsURL(name) {
		r, p, err := openRemotePack(name)
		if err != nil {
			return nil, nil, err
		}
		return r, p.Close, nil
	}
	fi, err := os.Stat(name)
	if err != nil {
		return nil, nil, err
	}
	if fi.IsDir() {
		src := packSource(name)
		return src, src.Close, nil
	}
	r, err := openPack(name)
	if err != nil {
		return nil, nil, err
	}
	return r, r.Close, nil
}

// openPack opens the pack file name, refusing what is not a regular
// file: packreader.Open of a FIFO blocks until a writer comes, which may
// be never.
func openPack(name string) (*packreader.Reader, error) {
	if remote.IsURL(name) {
		r, _, err := openRemotePack(name)
		return r, err
	}
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	}
	if err := packFile(name, fi); err != nil {
		return nil, err
	}
	return packreader.Open(name)
}

// packFile refuses to read a pack from what is not a regular file: a
// FIFO or a terminal would block the open, a device read until it ends.
func packFile(name string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	return &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("is a %s, not a pack file or a directory", entryKindName(fi))}
}

// entryKindName names a file's type as a user says it.
func entryKindName(fi fs.FileInfo) string {
	switch t := fi.Mode().Type(); {
	case t == 0:
		return "regular file"
	case t == fs.ModeDir:
		return "directory"
	case t == fs.ModeSymlink:
		return "symlink"
	case t == fs.ModeNamedPipe:
		return "FIFO"
	case t == fs.ModeSocket:
		return "socket"
	case layer.IsWhiteoutInfo(fi):
		return "whiteout"
	case t&fs.ModeCharDevice != 0:
		return "character device"
	case t == fs.ModeDevice:
		return "block device"
	}
	return "irregular file"
}

// keptModeBits are the mode bits a store keeps beside the type.
const keptModeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// printable returns the message s with control characters (but newlines,
// which separate joined errors, and tabs) and bytes that are not UTF-8
// written as Go escapes: a file name holding ESC sequences must not drive
// the terminal a message is printed on.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || r != '\n' && r != '\t' && (r < 0x20 || r >= 0x7f && r < 0xa0) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r != '\n' && r != '\t' && (r < 0x20 || r >= 0x7f && r < 0xa0):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
