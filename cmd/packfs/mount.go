package main

import (
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/dirfs"
	"github.com/packfs/packfs/fusefs"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/remote"
)

const mountHelp = "Mount a pack, an a.pack:b.pack stack, a host directory or a store directory through FUSE, in the foreground until unmounted or SIGINT/SIGTERM; --upper DIR writes to a store over a read-only SOURCE, which every later mount of DIR must give again."

var mountOpts struct {
	upper      string
	debug      bool
	readOnly   bool
	checkpoint bool
	allowOther bool
}

func mountFlags(fl *flag.FlagSet) {
	fl.StringVar(&mountOpts.upper, "upper", "", "a store directory to write to (created if missing or empty), over the read-only SOURCE: removals, renames and replaced directories of SOURCE's names are recorded in it; mount it again over the same SOURCE")
	fl.BoolVar(&mountOpts.debug, "d", false, "log every FUSE request")
	fl.BoolVar(&mountOpts.readOnly, "ro", false, "mount read-only")
	fl.BoolVar(&mountOpts.checkpoint, "checkpoint", false, "checkpoint the store before unmounting")
	fl.BoolVar(&mountOpts.allowOther, "allow-other", false, "let other users in (allow_other)")
}

// mounted is what mount serves and what it must close after.
type mounted struct {
	kind   string
	fsys   fs.FS
	opts   fusefs.Options
	store  *packfs.Store // the writable store, if any
	closes []func() error
}

func (m *mounted) close() error {
	var first error
	for i := len(m.closes) - 1; i >= 0; i-- {
		if err := m.closes[i](); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// openMounted opens SOURCE (and --upper) as the tree to mount.
func openMounted(source string) (*mounted, error) {
	m := &mounted{}
	fi, err := os.Stat(source)
	if err == nil && fi.IsDir() {
		if _, err := os.Stat(filepath.Join(source, storeManifest)); err == nil {
			if mountOpts.upper != "" {
				return nil, fmt.Errorf("%s is a store: it takes no --upper", source)
			}
			var s *packfs.Store
			if mountOpts.readOnly {
				s, err = openStoreReadOnly(source)
			} else {
				s, err = openStoreWritable(source, false)
			}
			if err != nil {
				return nil, err
			}
			m.kind, m.fsys, m.closes = "store", s, []func() error{s.Close}
			if !mountOpts.readOnly {
				m.store = s
			}
			m.opts.ReadOnly = mountOpts.readOnly
			return m, nil
		}
	}
	var lowers []fs.FS
	immutable := true
	for _, elem := range stackElems(source) {
		if remote.IsURL(elem) {
			r, err := openPack(elem)
			if err != nil {
				m.close()
				return nil, err
			}
			m.closes = append(m.closes, r.Close)
			lowers = append(lowers, r)
			continue
		}
		fi, err := os.Stat(elem)
		if err != nil {
			m.close()
			return nil, err
		}
		if fi.IsDir() {
			d, err := dirfs.New(elem, dirfs.ReadOnly())
			if err != nil {
				m.close()
				return nil, err
			}
			m.closes = append(m.closes, d.Close)
			lowers = append(lowers, d)
			immutable = false // the host may change it
			continue
		}
		r, err := openPack(elem)
		if err != nil {
			m.close()
			return nil, err
		}
		m.closes = append(m.closes, r.Close)
		lowers = append(lowers, r)
	}
	if len(lowers) == 1 && immutable && mountOpts.upper == "" {
		// A pack without whiteouts is its own tree, served without a
		// union in front.
		if r := lowers[0].(*packreader.Reader); packWhiteouts(r) == 0 {
			m.kind, m.fsys = "pack", r
			return m, nil
		}
	}
	m.kind = "pack"
	if len(lowers) > 1 {
		m.kind = "stack"
	} else if !immutable {
		m.kind = "directory"
	}
	if mountOpts.upper == "" {
		// A read-only union applies the whiteouts of delta packs.
		m.fsys = packfs.New(nil, lowers...)
		m.opts.ReadOnly, m.opts.Immutable = true, immutable
		return m, nil
	}
	// The store takes the lowers beneath its own packs, so that its
	// union records whiteouts and opaque directories over them, durably.
	// Its Close comes before theirs.
	s, err := openStoreWritable(mountOpts.upper, true, lowers...)
	if err != nil {
		m.close()
		return nil, err
	}
	m.closes = append(m.closes, s.Close)
	m.kind += " under store " + mountOpts.upper
	m.store = s
	m.fsys = s
	m.opts.ReadOnly = mountOpts.readOnly
	return m, nil
}

// packWhiteouts counts r's whiteouts, or -1 when it cannot tell.
func packWhiteouts(r *packreader.Reader) int64 {
	st, err := r.Stats()
	if err != nil {
		return -1
	}
	return int64(st.Whiteouts)
}

// cmdMount serves SOURCE at MOUNTPOINT until it is unmounted.
func cmdMount(_ *flag.FlagSet, args []string, _, stderr io.Writer) (err error) {
	source, dir := args[0], args[1]
	m, err := openMounted(source)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := m.close(); err == nil {
			err = cerr
		}
	}()
	m.opts.FsName = "packfs:" + source
	m.opts.Debug = mountOpts.debug
	m.opts.AllowOther = mountOpts.allowOther
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	srv, err := fusefs.Mount(dir, m.fsys, &m.opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "packfs mount: serving %s %s at %s\n", m.kind, source, dir)
	done := make(chan struct{})
	go func() { srv.Wait(); close(done) }()
	signalled := false
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case sig := <-sigs:
			if signalled {
				// A second signal: detach, so that the process can end
				// while programs still hold files there.
				fmt.Fprintf(stderr, "packfs mount: %v again: detaching %s\n", sig, dir)
				syscall.Unmount(dir, syscall.MNT_DETACH)
				continue
			}
			signalled = true
			if m.store != nil {
				if err := m.store.Sync(); err != nil {
					fmt.Fprintf(stderr, "packfs mount: sync: %v\n", err)
				}
			}
			if err := srv.Unmount(); err != nil {
				fmt.Fprintf(stderr, "packfs mount: %v: unmount %s: %v; still serving (signal again to detach)\n", sig, dir, err)
			}
		}
	}
	if m.store == nil {
		return nil
	}
	if err := m.store.Sync(); err != nil {
		return err
	}
	if mountOpts.checkpoint {
		if err := m.store.Checkpoint(); err != nil {
			return err
		}
	}
	return nil
}

// stackElems splits SOURCE at its colons into the stack's elements, top
// first. A bucket URL holds colons of its own (the scheme's, an
// endpoint's), so it is one element and must be the whole SOURCE.
func stackElems(source string) []string {
	if remote.IsURL(source) {
		return []string{source}
	}
	return strings.Split(source, ":")
}
