package aferobench

import (
	"io"
	"os"
	"time"

	"github.com/packfs/packfs/bench/internal/workload"
	"github.com/spf13/afero"
)

// floorFs is the least an afero.Fs can do for this workload: it keeps
// nothing, Create hands out a handle that drops what is written, Open one
// that reads the same 128 bytes, Stat a description made once, and
// Remove succeeds. Timed through the same helpers, it shows what afero's
// API costs on its own (afero.ReadFile: an Open, a Stat, a buffer grown
// to the size plus 512 bytes, and reads to EOF), which bounds the speedup
// any backend can show over another on that workload.
type floorFs struct{ afero.Fs }

var kindFloor = workload.Kind{Name: "floor", Concurrent: true, New: func(string) (workload.FS, error) {
	return workload.NewAfero(floorFs{}, "", ""), nil
}}

var floorPayload = make([]byte, smallSize)

type floorInfo struct{}

func (floorInfo) Name() string       { return "f" }
func (floorInfo) Size() int64        { return smallSize }
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
