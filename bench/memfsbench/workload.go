// Package memfsbench runs the workloads of the C predecessor's benchmark
// (bench/bench.c: 20,000 files of 128 bytes, 4,000 directories, sequential
// files of 1 to 64 MB in 64 KiB chunks, 8 concurrent workers) side by side
// on PackFS's in-memory layer (layer/mem), the host filesystem through
// package os (on the default temporary directory and on tmpfs), and afero's
// MemMapFs. It lives in the bench module so that afero stays out of the
// library. The benchmarks are in memfsbench_test.go:
//
//	cd bench && go test -run '^$' -bench . ./memfsbench/
//
// run.sh runs them all, -count 5, with benchtimes that keep the run near
// ten minutes on two cores, into one file for benchstat -col /backend.
//
// Every backend runs the same operations through its own idiomatic API:
// create is Create, Write, Close; read is ReadFile; stat is Stat; a listing
// is ReadDir (afero.ReadDir for afero); an overwrite is WriteFile.
package memfsbench

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/packfs/packfs/layer/mem"
	"github.com/spf13/afero"
)

// Backend is one filesystem under test. Every method takes a name made by
// Path, so that building names stays out of the timed code.
type Backend interface {
	// Path turns a slash-separated name relative to the backend's root
	// into the name the backend's API takes.
	Path(rel string) string
	// Create creates or truncates name, writes data unless it is empty,
	// and closes the file.
	Create(name string, data []byte) error
	ReadFile(name string) ([]byte, error)
	WriteFile(name string, data []byte) error
	Stat(name string) (fs.FileInfo, error)
	// ReadDir lists the directory name and returns how many entries it
	// holds.
	ReadDir(name string) (int, error)
	Mkdir(name string) error
	Remove(name string) error
	RemoveAll(name string) error
	// OpenWrite creates or truncates name for writing.
	OpenWrite(name string) (io.WriteCloser, error)
	// OpenRead opens name for reading.
	OpenRead(name string) (io.ReadCloser, error)
}

// Mem is PackFS's in-memory layer.
type Mem struct{ FS *mem.FS }

// NewMem returns a Mem over a new, empty mem.FS.
func NewMem() *Mem { return &Mem{mem.New()} }

func (m *Mem) Path(rel string) string { return rel }

func (m *Mem) Create(name string, data []byte) error {
	f, err := m.FS.Create(name)
	if err != nil {
		return err
	}
	if len(data) > 0 {
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func (m *Mem) ReadFile(name string) ([]byte, error) { return m.FS.ReadFile(name) }
func (m *Mem) WriteFile(name string, data []byte) error {
	return m.FS.WriteFile(name, data, 0o644)
}
func (m *Mem) Stat(name string) (fs.FileInfo, error) { return m.FS.Stat(name) }
func (m *Mem) ReadDir(name string) (int, error) {
	es, err := m.FS.ReadDir(name)
	return len(es), err
}
func (m *Mem) Mkdir(name string) error                       { return m.FS.Mkdir(name, 0o755) }
func (m *Mem) Remove(name string) error                      { return m.FS.Remove(name) }
func (m *Mem) RemoveAll(name string) error                   { return m.FS.RemoveAll(name) }
func (m *Mem) OpenWrite(name string) (io.WriteCloser, error) { return m.FS.Create(name) }
func (m *Mem) OpenRead(name string) (io.ReadCloser, error)   { return m.FS.Open(name) }

// OS is a directory of the host filesystem, used through package os with
// full paths.
type OS struct{ Root string }

func (o *OS) Path(rel string) string { return filepath.Join(o.Root, filepath.FromSlash(rel)) }

func (o *OS) Create(name string, data []byte) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if len(data) > 0 {
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func (o *OS) ReadFile(name string) ([]byte, error)     { return os.ReadFile(name) }
func (o *OS) WriteFile(name string, data []byte) error { return os.WriteFile(name, data, 0o644) }
func (o *OS) Stat(name string) (fs.FileInfo, error)    { return os.Stat(name) }
func (o *OS) ReadDir(name string) (int, error) {
	es, err := os.ReadDir(name)
	return len(es), err
}
func (o *OS) Mkdir(name string) error                       { return os.Mkdir(name, 0o755) }
func (o *OS) Remove(name string) error                      { return os.Remove(name) }
func (o *OS) RemoveAll(name string) error                   { return os.RemoveAll(name) }
func (o *OS) OpenWrite(name string) (io.WriteCloser, error) { return os.Create(name) }
func (o *OS) OpenRead(name string) (io.ReadCloser, error)   { return os.Open(name) }

// Afero is an afero.Fs, used through afero's API with absolute names.
type Afero struct{ Fs afero.Fs }

// NewAfero returns an Afero over a new afero.MemMapFs.
func NewAfero() *Afero { return &Afero{afero.NewMemMapFs()} }

func (a *Afero) Path(rel string) string { return "/" + rel }

func (a *Afero) Create(name string, data []byte) error {
	f, err := a.Fs.Create(name)
	if err != nil {
		return err
	}
	if len(data) > 0 {
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func (a *Afero) ReadFile(name string) ([]byte, error) { return afero.ReadFile(a.Fs, name) }
func (a *Afero) WriteFile(name string, data []byte) error {
	return afero.WriteFile(a.Fs, name, data, 0o644)
}
func (a *Afero) Stat(name string) (fs.FileInfo, error) { return a.Fs.Stat(name) }
func (a *Afero) ReadDir(name string) (int, error) {
	fis, err := afero.ReadDir(a.Fs, name)
	return len(fis), err
}
func (a *Afero) Mkdir(name string) error                       { return a.Fs.Mkdir(name, 0o755) }
func (a *Afero) Remove(name string) error                      { return a.Fs.Remove(name) }
func (a *Afero) RemoveAll(name string) error                   { return a.Fs.RemoveAll(name) }
func (a *Afero) OpenWrite(name string) (io.WriteCloser, error) { return a.Fs.Create(name) }
func (a *Afero) OpenRead(name string) (io.ReadCloser, error)   { return a.Fs.Open(name) }

// Payload returns n bytes of recognisable content.
func Payload(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte('a' + i%26)
	}
	return p
}

// Names returns n backend names dir/prefixNNNNNN.
func Names(be Backend, dir, prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = be.Path(fmt.Sprintf("%s/%s%06d", dir, prefix, i))
	}
	return names
}

// CreateAll creates every name with data.
func CreateAll(be Backend, names []string, data []byte) error {
	for _, n := range names {
		if err := be.Create(n, data); err != nil {
			return err
		}
	}
	return nil
}

// ReadAll reads every name and checks that it holds size bytes.
func ReadAll(be Backend, names []string, size int) error {
	for _, n := range names {
		b, err := be.ReadFile(n)
		if err != nil {
			return err
		}
		if len(b) != size {
			return fmt.Errorf("%s: read %d bytes, want %d", n, len(b), size)
		}
	}
	return nil
}

// StatAll stats every name.
func StatAll(be Backend, names []string) error {
	for _, n := range names {
		if _, err := be.Stat(n); err != nil {
			return err
		}
	}
	return nil
}

// RemoveEach removes every name, file or empty directory.
func RemoveEach(be Backend, names []string) error {
	for _, n := range names {
		if err := be.Remove(n); err != nil {
			return err
		}
	}
	return nil
}

// MkdirEach makes every name a directory.
func MkdirEach(be Backend, names []string) error {
	for _, n := range names {
		if err := be.Mkdir(n); err != nil {
			return err
		}
	}
	return nil
}

// SeqWrite creates or truncates name and writes size bytes to it in
// len(chunk) pieces.
func SeqWrite(be Backend, name string, size int, chunk []byte) error {
	f, err := be.OpenWrite(name)
	if err != nil {
		return err
	}
	for done := 0; done < size; done += len(chunk) {
		if _, err := f.Write(chunk[:min(len(chunk), size-done)]); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// SeqRead reads name to its end through buf and returns how many bytes it
// read.
func SeqRead(be Backend, name string, buf []byte) (int64, error) {
	f, err := be.OpenRead(name)
	if err != nil {
		return 0, err
	}
	var total int64
	for {
		n, err := f.Read(buf)
		total += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			f.Close()
			return total, err
		}
	}
	return total, f.Close()
}

// parallel runs work(g) for g in [0, n) on n goroutines and returns the
// first error.
func parallel(n int, work func(g int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for g := range n {
		wg.Go(func() { errs[g] = work(g) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// CreateReadRemove runs one goroutine per element of names; each creates,
// reads back and removes its names one by one.
func CreateReadRemove(be Backend, names [][]string, data []byte) error {
	return parallel(len(names), func(g int) error {
		for _, n := range names[g] {
			if err := be.Create(n, data); err != nil {
				return err
			}
			b, err := be.ReadFile(n)
			if err != nil {
				return err
			}
			if len(b) != len(data) {
				return fmt.Errorf("%s: read %d bytes, want %d", n, len(b), len(data))
			}
			if err := be.Remove(n); err != nil {
				return err
			}
		}
		return nil
	})
}

// ReadMostly runs workers goroutines of ops operations each over the
// existing files names: writePct percent overwrite a random file with data
// (WriteFile), the rest read a random file (ReadFile). seed varies the
// choices between runs.
func ReadMostly(be Backend, names []string, data []byte, workers, ops, writePct int, seed uint64) error {
	return parallel(workers, func(g int) error {
		r := rand.New(rand.NewPCG(seed, uint64(g)))
		for range ops {
			n := names[r.IntN(len(names))]
			if r.IntN(100) < writePct {
				if err := be.WriteFile(n, data); err != nil {
					return err
				}
			} else if _, err := be.ReadFile(n); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
				// afero's MemMapFs reports a read racing a writer's
				// truncate-then-write as ErrUnexpectedEOF (its file
				// shrank under the read); the workload times reads, so
				// such a read counts as done.
				return err
			}
		}
		return nil
	})
}

// CreateEmptyTree makes dirs directories of files empty files each. It
// builds the names as it goes, so that whatever the backend keeps of them
// counts as the backend's memory.
func CreateEmptyTree(be Backend, dirs, files int) error {
	var buf []byte
	for d := range dirs {
		dir := be.Path("d" + strconv.Itoa(d))
		if err := be.Mkdir(dir); err != nil {
			return err
		}
		for i := range files {
			buf = strconv.AppendInt(append(append(buf[:0], dir...), "/f"...), int64(i), 10)
			if err := be.Create(string(buf), nil); err != nil {
				return err
			}
		}
	}
	return nil
}
