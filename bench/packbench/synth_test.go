package packbench

import (
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"
)

// synth is a generated read-only tree: dirs directories "dNNNN" of files
// files "fNNNN" each, whose 8-byte contents are distinct. It lists and
// opens in O(1) per entry, unlike a MapFS of a million entries.
type synth struct{ dirs, files int }

type synthInfo struct {
	name string
	dir  bool
}

func (i synthInfo) Name() string { return i.name }
func (i synthInfo) Size() int64 {
	if i.dir {
		return 0
	}
	return 8
}
func (i synthInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i synthInfo) ModTime() time.Time         { return time.Unix(1e9, 0) }
func (i synthInfo) IsDir() bool                { return i.dir }
func (i synthInfo) Sys() any                   { return nil }
func (i synthInfo) Type() fs.FileMode          { return i.Mode().Type() }
func (i synthInfo) Info() (fs.FileInfo, error) { return i, nil }

type synthFile struct {
	info synthInfo
	data []byte
	off  int
}

func (f *synthFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *synthFile) Close() error               { return nil }
func (f *synthFile) Read(p []byte) (int, error) {
	if f.off >= len(f.data) {
		return 0, io.EOF
	}
	n := copy(p, f.data[f.off:])
	f.off += n
	return n, nil
}

func (s synth) Open(name string) (fs.File, error) {
	if name == "." {
		return &synthFile{info: synthInfo{".", true}}, nil
	}
	d, f, _ := strings.Cut(name, "/")
	di, err := strconv.Atoi(strings.TrimPrefix(d, "d"))
	if err != nil || di >= s.dirs {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	if f == "" {
		return &synthFile{info: synthInfo{d, true}}, nil
	}
	fi, err := strconv.Atoi(strings.TrimPrefix(f, "f"))
	if err != nil || fi >= s.files {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	data := binary.LittleEndian.AppendUint64(nil, uint64(di*s.files+fi))
	return &synthFile{info: synthInfo{f, false}, data: data}, nil
}

func (s synth) ReadDir(name string) ([]fs.DirEntry, error) {
	var out []fs.DirEntry
	if name == "." {
		for i := range s.dirs {
			out = append(out, synthInfo{fmt.Sprintf("d%04d", i), true})
		}
		return out, nil
	}
	for i := range s.files {
		out = append(out, synthInfo{fmt.Sprintf("f%04d", i), false})
	}
	return out, nil
}
