package workload

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/spf13/afero"
)

// The afero table (issue 19): every small-file workload through afero's
// API, each backend's time over MemMapFs's in the same run. The runner's
// afero category and aferobench's BenchmarkTable both time these columns
// and rows.

// TableSmall is the size of each file of the afero table, in bytes.
const TableSmall = 128

// TableLower is how many other files the union column's pack holds in the
// directory of the workload's files, so that every name is looked up in a
// merged directory.
const TableLower = 1_000

// TableColumn is one backend of the afero table.
type TableColumn struct {
	// Name labels the column.
	Name string
	// Ours marks PackFS's backends.
	Ours bool
	// Host marks columns that keep their data in the host directory
	// given to New: they run once per place (disk, tmpfs).
	Host bool
	// Empty marks a file system that keeps nothing (floor): reads need no
	// files made first.
	Empty bool
	// Base marks the column every ratio divides by (MemMapFs).
	Base bool
	// new returns the file system in dir, a new directory it owns; lower,
	// when not nil, are relative names it must already hold as files of
	// TableSmall bytes, and a column that cannot hold them so returns nil.
	new func(dir string, lower []string) (FS, error)
}

// TableColumns returns the afero table's columns, MemMapFs first.
func TableColumns() []TableColumn {
	plain := func(k Kind) func(string, []string) (FS, error) {
		return func(_ string, lower []string) (FS, error) {
			if lower != nil {
				return nil, nil
			}
			return k.New("")
		}
	}
	return []TableColumn{
		{Name: "memmapfs", Base: true, new: plain(KindMemMapFs)},
		{Name: "mem", Ours: true, new: plain(KindAdapter)},
		{Name: "union", Ours: true, new: func(dir string, lower []string) (FS, error) {
			if lower != nil {
				return nil, nil
			}
			return tableUnion(dir, Rel("run", "l", TableLower))
		}},
		{Name: "union-lower", Ours: true, new: func(dir string, lower []string) (FS, error) {
			if lower == nil {
				return nil, nil
			}
			return tableUnion(dir, lower)
		}},
		{Name: "store", Ours: true, Host: true, new: func(dir string, lower []string) (FS, error) {
			if lower != nil {
				return nil, nil
			}
			s, err := packfs.Open(dir, &packfs.Options{Sync: packfs.SyncNone, CheckpointBytes: -1})
			if err != nil {
				return nil, err
			}
			return closer{NewAfero(aferoadapter.New(s), "", ""), s.Close}, nil
		}},
		{Name: "floor", Empty: true, new: plain(KindFloor)},
	}
}

// tableUnion is the adapter over a union of an empty in-memory layer over
// a pack, written in dir, holding names (relative, as Rel makes them).
func tableUnion(dir string, names []string) (FS, error) {
	tree := Tree{Names: names, Data: func(int) []byte { return Payload(TableSmall) }}
	name := filepath.Join(dir, "lower.pack")
	if err := tree.WritePack(name); err != nil {
		return nil, err
	}
	r, err := packreader.Open(name)
	if err != nil {
		return nil, err
	}
	return closer{NewAfero(aferoadapter.New(packfs.New(mem.New(), r)), "", ""), r.Close}, nil
}

// closer is an FS whose Close also runs close.
type closer struct {
	FS
	close func() error
}

func (c closer) Close() error { return errors.Join(c.close(), c.FS.Close()) }

// Setup returns the column's file system for row, in dir (a new
// directory, which the caller removes after Close), with the names the
// row works on, or a nil FS when the column has no part in the row.
func (col TableColumn) Setup(row TableRow, dir string) (FS, []string, error) {
	if row.Lower {
		lower := Rel("run", "f", row.Files)
		fsys, err := col.new(dir, lower)
		if err != nil {
			return nil, nil, err
		}
		if fsys != nil {
			return fsys, Names(fsys, "run", "f", row.Files), nil
		}
	}
	fsys, err := col.new(dir, nil)
	if err != nil || fsys == nil {
		return nil, nil, err
	}
	if err := fsys.Mkdir(fsys.Path("run")); err != nil && !os.IsExist(err) {
		fsys.Close()
		return nil, nil, err
	}
	names := Names(fsys, "run", "f", row.Files)
	if row.Lower && !col.Empty {
		if err := CreateAll(fsys, names, Payload(TableSmall)); err != nil {
			fsys.Close()
			return nil, nil, err
		}
	}
	return fsys, names, nil
}

// TableRow is one workload of the afero table: Prep, untimed, readies the
// file system for Run, timed.
type TableRow struct {
	Name string
	// Files is how many names the row works on; Ops how many operations
	// one Run makes.
	Files, Ops int
	// Lower marks rows whose files exist before Run (the union-lower
	// column holds them in its pack).
	Lower bool
	Prep  func(fsys FS, names []string) error
	Run   func(fsys FS, names []string, seed uint64) error
}

// TableRows returns the afero table's workloads over n files: open, read
// and close; stat; create; unlink; rmdir; workers goroutines creating,
// reading and removing n/5 files each; workers goroutines making n
// operations each, 5% of them writes.
func TableRows(n, workers int) []TableRow {
	data := Payload(TableSmall)
	none := func(FS, []string) error { return nil }
	per := max(1, n/5)
	return []TableRow{
		{"open-read-close", n, n, true, none, func(fsys FS, names []string, _ uint64) error {
			return ReadAll(fsys, names, TableSmall)
		}},
		{"stat", n, n, true, none, func(fsys FS, names []string, _ uint64) error {
			return StatAll(fsys, names)
		}},
		{"create", n, n, false, func(fsys FS, names []string) error {
			for _, name := range names {
				if err := fsys.Remove(name); err != nil && !os.IsNotExist(err) {
					return err
				}
			}
			return nil
		}, func(fsys FS, names []string, _ uint64) error {
			return CreateAll(fsys, names, data)
		}},
		{"unlink", n, n, false, func(fsys FS, names []string) error {
			return CreateAll(fsys, names, data)
		}, func(fsys FS, names []string, _ uint64) error {
			return RemoveEach(fsys, names)
		}},
		{"rmdir", n, n, false, func(fsys FS, names []string) error {
			return MkdirEach(fsys, names)
		}, func(fsys FS, names []string, _ uint64) error {
			return RemoveEach(fsys, names)
		}},
		{strconv.Itoa(workers) + "-goroutines-create-read-unlink", workers * per, workers * per, false, none, func(fsys FS, names []string, _ uint64) error {
			split := make([][]string, workers)
			for g := range split {
				split[g] = names[g*per : (g+1)*per]
			}
			return CreateReadRemove(fsys, split, data)
		}},
		{strconv.Itoa(workers) + "-goroutines-95pct-read", n, workers * n, true, none, func(fsys FS, names []string, seed uint64) error {
			return ReadMostly(fsys, names, data, workers, n, 5, seed)
		}},
	}
}

// KindFloor is the least an afero.Fs can do for the afero table: it keeps
// nothing, Create hands out a handle that drops what is written, Open one
// that reads the same TableSmall bytes, Stat a description made once, and
// Remove succeeds. Timed through the same helpers, it shows what afero's
// API costs on its own (afero.ReadFile: an Open, a Stat, a buffer grown
// to the size plus 512 bytes, and reads to EOF), which bounds the speedup
// any backend can show over another. It cannot list.
var KindFloor = Kind{Name: "floor", Concurrent: true, New: func(string) (FS, error) {
	return NewAfero(floorFs{}, "", ""), nil
}}

type floorFs struct{ afero.Fs }

var _ afero.Fs = floorFs{}

var floorPayload = make([]byte, TableSmall)

type floorInfo struct{}

func (floorInfo) Name() string       { return "f" }
func (floorInfo) Size() int64        { return TableSmall }
func (floorInfo) Mode() os.FileMode  { return 0o644 }
func (floorInfo) ModTime() time.Time { return time.Time{} }
func (floorInfo) IsDir() bool        { return false }
func (floorInfo) Sys() any           { return nil }

type floorFile struct {
	afero.File
	off int
}

func (f *floorFile) Read(p []byte) (int, error) {
	if f.off >= len(floorPayload) {
		return 0, io.EOF
	}
	n := copy(p, floorPayload[f.off:])
	f.off += n
	return n, nil
}
func (f *floorFile) Write(p []byte) (int, error)        { return len(p), nil }
func (f *floorFile) Stat() (os.FileInfo, error)         { return floorInfo{}, nil }
func (f *floorFile) Close() error                       { return nil }
func (f *floorFile) Name() string                       { return "f" }
func (f *floorFile) Readdir(int) ([]os.FileInfo, error) { return nil, nil }

func (floorFs) Name() string                       { return "floor" }
func (floorFs) Open(string) (afero.File, error)    { return &floorFile{}, nil }
func (floorFs) Create(string) (afero.File, error)  { return &floorFile{}, nil }
func (floorFs) Stat(string) (os.FileInfo, error)   { return floorInfo{}, nil }
func (floorFs) Mkdir(string, os.FileMode) error    { return nil }
func (floorFs) MkdirAll(string, os.FileMode) error { return nil }
func (floorFs) Remove(string) error                { return nil }
func (floorFs) RemoveAll(string) error             { return nil }
func (floorFs) OpenFile(string, int, os.FileMode) (afero.File, error) {
	return &floorFile{}, nil
}
