package packreader

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"unsafe"
)

// A pack opened with Open is read through a shared mapping of its file.
// If the file shrinks while it is mapped (truncated in place, or rewritten
// through O_TRUNC), touching a page past its new end raises SIGBUS, which
// the Go runtime turns into a crash of the whole process unless the
// goroutine asked for a panic instead (debug.SetPanicOnFault). So every
// method that touches the mapping does so between rlock and a deferred
// held.unlock: rlock arms the calling goroutine's panic on fault, and
// unlock disarms it, recovers a fault at an address inside the mapping and
// returns it as an error wrapping ErrChanged. Any other panic goes on.
// The cost is one deferred call and two flag writes per method call, never
// per byte or per record: the loops inside a method run unguarded.

// ErrChanged is wrapped, with ErrCorrupt, by the error of a read that
// found part of a mapped pack gone: its file was truncated or rewritten in
// place while the Reader had it mapped.
var ErrChanged = errors.New("packreader: pack file changed while mapped")

// changedError reports a fault at byte off of a mapping of size bytes.
type changedError struct{ off, size uintptr }

func (e *changedError) Error() string {
	return fmt.Sprintf("%v (truncated?): no page at byte %d of the %d mapped", ErrChanged, e.off, e.size)
}

func (e *changedError) Unwrap() []error { return []error{ErrChanged, ErrCorrupt} }

// held is a read lock on a Reader, taken by rlock: unlock releases it.
type held struct {
	r        *Reader
	op, name string
	armed    bool // panic on fault was set for the mapping
	old      bool // the goroutine's setting before
}

// rlock locks r for reading and reports fs.ErrClosed once closed. On
// success the caller must defer h.unlock(&err), err being its error
// result, before it touches the mapping.
func (r *Reader) rlock(op, name string) (h held, err error) {
	r.mu.RLock()
	if r.closed {
		r.mu.RUnlock()
		return h, &os.PathError{Op: op, Path: name, Err: os.ErrClosed}
	}
	h = held{r: r, op: op, name: name}
	if r.mapped != nil {
		h.armed, h.old = true, debug.SetPanicOnFault(true)
	}
	return h, nil
}

// unlock releases the read lock. Deferred, it turns a fault inside the
// mapping into *err, a *fs.PathError wrapping ErrChanged and ErrCorrupt.
func (h held) unlock(err *error) {
	r := h.r
	if !h.armed {
		r.mu.RUnlock()
		return
	}
	debug.SetPanicOnFault(h.old)
	e := recover()
	if e == nil {
		r.mu.RUnlock()
		return
	}
	off, ok := r.faultOffset(e)
	size := uintptr(len(r.mapped))
	r.mu.RUnlock()
	if !ok {
		panic(e)
	}
	*err = pathErr(h.op, h.name, &changedError{off: off, size: size})
}

// faultOffset returns where in the mapping the fault e, recovered from a
// panic, happened: a runtime.Error with an Addr method (what a fault
// under debug.SetPanicOnFault raises) at an address inside the mapping.
// The caller holds r.mu.
func (r *Reader) faultOffset(e any) (uintptr, bool) {
	fe, ok := e.(interface {
		error
		RuntimeError()
		Addr() uintptr
	})
	if !ok || len(r.mapped) == 0 {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(r.mapped)))
	off := fe.Addr() - base
	return off, fe.Addr() >= base && off < uintptr(len(r.mapped))
}
