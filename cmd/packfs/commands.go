package main

import (
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"text/tabwriter"
	"time"

	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

func cmdPack(_ *flag.FlagSet, args []string, _, stderr io.Writer) error {
	dir, out := args[0], args[1]
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: not a directory", dir)
	}
	src := os.DirFS(dir)
	var opts []packwriter.Option
	if bar := newBar(stderr, "packing", func() int64 { return countEntries(src) }); bar != nil {
		opts = append(opts, packwriter.WithProgress(func(p packwriter.Progress) { bar.Set64(int64(p.Entries)) }))
		defer bar.Finish()
	}
	return packwriter.WriteFile(out, src, opts...)
}

// countEntries counts the entries of fsys, for the progress bar's total.
func countEntries(fsys fs.FS) int64 {
	var n int64
	_ = fs.WalkDir(fsys, ".", func(string, fs.DirEntry, error) error { n++; return nil })
	return n
}

func cmdUnpack(_ *flag.FlagSet, args []string, _, stderr io.Writer) error {
	r, err := packreader.Open(args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	var progress func()
	if bar := newBar(stderr, "unpacking", func() int64 {
		st, _ := r.Stats()
		return int64(st.Entries)
	}); bar != nil {
		progress = func() { bar.Add(1) }
		defer bar.Finish()
	}
	return unpack(r, args[1], progress)
}

var longList bool

func lsFlags(fl *flag.FlagSet) {
	fl.BoolVar(&longList, "l", false, "long listing: mode, size, modification time, name, symlink target")
}

func cmdLs(_ *flag.FlagSet, args []string, stdout, _ io.Writer) error {
	r, err := packreader.Open(args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	p := "."
	if len(args) > 1 {
		p = args[1]
	}
	fi, err := r.Stat(p)
	if err != nil {
		return err
	}
	var infos []fs.FileInfo
	var dir string
	if fi.IsDir() {
		ents, err := r.ReadDir(p)
		if err != nil {
			return err
		}
		for _, e := range ents {
			info, err := e.Info()
			if err != nil {
				return err
			}
			infos = append(infos, info)
		}
		dir = p
	} else {
		lfi, err := r.Lstat(p)
		if err != nil {
			return err
		}
		infos = append(infos, lfi)
		dir = ""
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 1, ' ', tabwriter.AlignRight)
	for _, info := range infos {
		name := info.Name()
		if dir == "" {
			name = p
		}
		if !longList {
			fmt.Fprintln(stdout, name)
			continue
		}
		line := fmt.Sprintf("%v\t%d\t %s %s", info.Mode(), info.Size(), info.ModTime().UTC().Format(time.DateTime), name)
		if info.Mode()&fs.ModeSymlink != 0 {
			target := name
			if dir != "" {
				target = dir + "/" + name
				if dir == "." {
					target = name
				}
			}
			if t, err := r.ReadLink(target); err == nil {
				line += " -> " + t
			}
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

func cmdCat(_ *flag.FlagSet, args []string, stdout, _ io.Writer) error {
	r, err := packreader.Open(args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := r.Open(args[1])
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.(io.WriterTo).WriteTo(stdout)
	return err
}

func cmdVerify(_ *flag.FlagSet, args []string, stdout, _ io.Writer) error {
	r, err := packreader.Open(args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.Verify(); err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	st, err := r.Stats()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok, %d entries, %d bytes of content verified\n", args[0], st.Entries, st.Stored)
	return nil
}

func cmdInfo(_ *flag.FlagSet, args []string, stdout, _ io.Writer) error {
	r, err := packreader.Open(args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	st, err := r.Stats()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 1, ' ', 0)
	fmt.Fprintf(tw, "entries:\t%d (%d files, %d directories, %d symlinks, %d whiteouts)\n", st.Entries, st.Files, st.Dirs, st.Symlinks, st.Whiteouts)
	fmt.Fprintf(tw, "contents:\t%d distinct\n", st.Contents)
	fmt.Fprintf(tw, "file bytes:\t%d\n", st.Logical)
	fmt.Fprintf(tw, "stored bytes:\t%d (data region, with alignment)\n", st.Stored)
	saved := st.Saved()
	pct := 0.0
	if st.Logical > 0 {
		pct = 100 * float64(saved) / float64(st.Logical)
	}
	fmt.Fprintf(tw, "dedup savings:\t%d bytes (%.1f%%)\n", saved, pct)
	fmt.Fprintf(tw, "pack size:\t%d\n", st.Size)
	return tw.Flush()
}
