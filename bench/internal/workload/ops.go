package workload

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
)

// Payload returns n bytes of recognisable content.
func Payload(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte('a' + i%26)
	}
	return p
}

// Distinct returns n bytes that differ from Distinct(j, n) for every
// j != i.
func Distinct(i, n int) []byte {
	p := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(i), 0x9e3779b97f4a7c15))
	for j := range p {
		p[j] = byte(r.Uint32())
	}
	return p
}

// Rel returns the relative names dir/prefixNNNNNNN for i in [0, n).
func Rel(dir, prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s/%s%07d", dir, prefix, i)
	}
	return names
}

// Names returns Rel(dir, prefix, n) turned into fsys's names by its Path.
func Names(fsys FS, dir, prefix string, n int) []string {
	names := Rel(dir, prefix, n)
	for i, n := range names {
		names[i] = fsys.Path(n)
	}
	return names
}

// CreateAll creates every name with data.
func CreateAll(fsys FS, names []string, data []byte) error {
	for _, n := range names {
		if err := fsys.Create(n, data); err != nil {
			return err
		}
	}
	return nil
}

// ReadAll reads every name and checks that it holds size bytes.
func ReadAll(fsys FS, names []string, size int) error {
	for _, n := range names {
		b, err := fsys.ReadFile(n)
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
func StatAll(fsys FS, names []string) error {
	for _, n := range names {
		if err := fsys.Stat(n); err != nil {
			return err
		}
	}
	return nil
}

// ReadDirCount lists dir and checks that it holds want entries.
func ReadDirCount(fsys FS, dir string, want int) error {
	n, err := fsys.ReadDir(dir)
	if err != nil {
		return err
	}
	if n != want {
		return fmt.Errorf("%s: %d entries, want %d", dir, n, want)
	}
	return nil
}

// RemoveEach removes every name, file or empty directory.
func RemoveEach(fsys FS, names []string) error {
	for _, n := range names {
		if err := fsys.Remove(n); err != nil {
			return err
		}
	}
	return nil
}

// MkdirEach makes every name a directory.
func MkdirEach(fsys FS, names []string) error {
	for _, n := range names {
		if err := fsys.Mkdir(n); err != nil {
			return err
		}
	}
	return nil
}

// SeqWrite creates or truncates name and writes size bytes to it in
// len(chunk) pieces.
func SeqWrite(fsys FS, name string, size int, chunk []byte) error {
	f, err := fsys.OpenWrite(name)
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

// SeqRead reads name to its end through buf and checks that it holds
// size bytes.
func SeqRead(fsys FS, name string, size int, buf []byte) error {
	f, err := fsys.OpenRead(name)
	if err != nil {
		return err
	}
	var total int
	for {
		n, err := f.Read(buf)
		total += n
		if err == io.EOF {
			break
		}
		if err != nil {
			f.Close()
			return err
		}
	}
	if total != size {
		f.Close()
		return fmt.Errorf("%s: read %d bytes, want %d", name, total, size)
	}
	return f.Close()
}

// Parallel runs work(g) for g in [0, n) on n goroutines and returns the
// first error.
func Parallel(n int, work func(g int) error) error {
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
func CreateReadRemove(fsys FS, names [][]string, data []byte) error {
	return Parallel(len(names), func(g int) error {
		for _, n := range names[g] {
			if err := fsys.Create(n, data); err != nil {
				return err
			}
			b, err := fsys.ReadFile(n)
			if err != nil {
				return err
			}
			if len(b) != len(data) {
				return fmt.Errorf("%s: read %d bytes, want %d", n, len(b), len(data))
			}
			if err := fsys.Remove(n); err != nil {
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
func ReadMostly(fsys FS, names []string, data []byte, workers, ops, writePct int, seed uint64) error {
	return Parallel(workers, func(g int) error {
		r := rand.New(rand.NewPCG(seed, uint64(g)))
		for range ops {
			n := names[r.IntN(len(names))]
			if r.IntN(100) < writePct {
				if err := fsys.WriteFile(n, data); err != nil {
					return err
				}
			} else if _, err := fsys.ReadFile(n); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
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
// builds the names as it goes, so that whatever the file system keeps of
// them counts as its memory.
func CreateEmptyTree(fsys FS, dirs, files int) error {
	var buf []byte
	for d := range dirs {
		dir := fsys.Path("d" + strconv.Itoa(d))
		if err := fsys.Mkdir(dir); err != nil {
			return err
		}
		for i := range files {
			buf = strconv.AppendInt(append(append(buf[:0], dir...), "/f"...), int64(i), 10)
			if err := fsys.Create(string(buf), nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// Shuffled returns names in a random order fixed by seed.
func Shuffled(names []string, seed uint64) []string {
	out := make([]string, len(names))
	for i, j := range rand.New(rand.NewPCG(seed, 1)).Perm(len(names)) {
		out[i] = names[j]
	}
	return out
}

// Join returns the first non-nil error.
func Join(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
