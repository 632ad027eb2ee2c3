package packfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/vfs"
	"github.com/packfs/packfs/vfs/vfstest"
)

// damagedStore makes a store in a host directory holding 50 checkpointed
// files and 20 more each made durable by its own Sync, closes it, and
// returns its directory, its current log segment and its newest pack.
func damagedStore(t *testing.T) (dir, segment, pack string) {
	t.Helper()
	dir = t.TempDir()
	s := openStore(t, dir, &packfs.Options{CheckpointBytes: -1})
	for i := range 50 {
		mustDo(t, s.WriteFile(fmt.Sprintf("c%d", i), bytes.Repeat([]byte{'c'}, 1000), 0o644))
	}
	mustDo(t, s.Checkpoint())
	for i := range 20 {
		mustDo(t, s.WriteFile(fmt.Sprintf("s%d", i), bytes.Repeat([]byte{'s'}, 1000), 0o644))
		mustDo(t, s.Sync())
	}
	mustDo(t, s.Close())
	names, err := os.ReadDir(dir)
	mustDo(t, err)
	for _, n := range names {
		switch {
		case strings.HasPrefix(n.Name(), "wal-"):
			segment = filepath.Join(dir, n.Name())
		case strings.HasSuffix(n.Name(), ".pack"):
			pack = filepath.Join(dir, n.Name())
		}
	}
	if segment == "" || pack == "" {
		t.Fatalf("no segment or pack in %v", names)
	}
	return dir, segment, pack
}

// wantCorrupt checks that opening the store in dir, for writing and for
// reading, fails with ErrCorrupt, and that the failed open changed nothing.
func wantCorrupt(t *testing.T, dir string) {
	t.Helper()
	before := dirState(t, dir)
	for _, ro := range []bool{true, false} {
		s, err := packfs.Open(dir, &packfs.Options{ReadOnly: ro})
		if err == nil {
			n, _ := s.ReadDir(".")
			s.Close()
			t.Fatalf("open (read-only %v) of a store missing acknowledged data succeeded, holding %d names", ro, len(n))
		}
		if !errors.Is(err, packfs.ErrCorrupt) {
			t.Fatalf("open (read-only %v): %v, want ErrCorrupt", ro, err)
		}
	}
	if after := dirState(t, dir); after != before {
		t.Fatalf("a failed open changed the directory:\nbefore %s\nafter  %s", before, after)
	}
}

// dirState lists a directory's data files with their sizes and checksums.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	names, err := os.ReadDir(dir)
	mustDo(t, err)
	var b strings.Builder
	for _, n := range names {
		if n.Name() == "LOCK" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, n.Name()))
		mustDo(t, err)
		fmt.Fprintf(&b, "%s:%d:%x ", n.Name(), len(data), crc(data))
	}
	return b.String()
}

func crc(b []byte) uint32 {
	var h uint32 = 2166136261
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return h
}

// TestIssue14Undamaged is the control of the damage tests below: the
// store they damage opens whole.
func TestIssue14Undamaged(t *testing.T) {
	dir, _, _ := damagedStore(t)
	s := openStore(t, dir, nil)
	names, err := s.ReadDir(".")
	mustDo(t, err)
	if len(names) != 70 {
		t.Fatalf("%d names, want 70", len(names))
	}
}

// TestIssue14SegmentDeleted: the log segment holding 20 synced files is
// gone.
func TestIssue14SegmentDeleted(t *testing.T) {
	dir, seg, _ := damagedStore(t)
	mustDo(t, os.Remove(seg))
	wantCorrupt(t, dir)
}

// TestIssue14SegmentTruncatedToZero: the segment is emptied.
func TestIssue14SegmentTruncatedToZero(t *testing.T) {
	dir, seg, _ := damagedStore(t)
	mustDo(t, os.Truncate(seg, 0))
	wantCorrupt(t, dir)
}

// TestIssue14SegmentTruncatedHalfway: the segment loses the second half
// of its records.
func TestIssue14SegmentTruncatedHalfway(t *testing.T) {
	dir, seg, _ := damagedStore(t)
	data, err := os.ReadFile(seg)
	mustDo(t, err)
	end := len(bytes.TrimRight(data, "\x00")) // the records, without preallocated zeros
	mustDo(t, os.Truncate(seg, int64(end/2)))
	wantCorrupt(t, dir)
}

// TestIssue14SegmentLastRecordsCut: the segment loses only its last
// records and its preallocated zeros.
func TestIssue14SegmentLastRecordsCut(t *testing.T) {
	dir, seg, _ := damagedStore(t)
	data, err := os.ReadFile(seg)
	mustDo(t, err)
	end := len(bytes.TrimRight(data, "\x00"))
	mustDo(t, os.Truncate(seg, int64(end-1500)))
	wantCorrupt(t, dir)
}

// TestIssue14PackReplaced: the pack is replaced by another valid pack.
func TestIssue14PackReplaced(t *testing.T) {
	dir, _, pack := damagedStore(t)
	other := t.TempDir()
	s := openStore(t, other, &packfs.Options{CheckpointBytes: -1})
	mustDo(t, s.WriteFile("other", []byte("another tree"), 0o644))
	mustDo(t, s.Checkpoint())
	mustDo(t, s.Close())
	names, err := filepath.Glob(filepath.Join(other, "*.pack"))
	mustDo(t, err)
	if len(names) != 1 {
		t.Fatalf("packs %v", names)
	}
	data, err := os.ReadFile(names[0])
	mustDo(t, err)
	mustDo(t, os.WriteFile(pack, data, 0o644))
	wantCorrupt(t, dir)
}

// TestIssue14PackSameShapeReplaced: the pack is replaced by a valid pack
// of the same tree, sizes and times, whose contents differ.
func TestIssue14PackSameShapeReplaced(t *testing.T) {
	dir, _, pack := damagedStore(t)
	data, err := os.ReadFile(pack)
	mustDo(t, err)
	// Rewrite the same tree with other bytes of the same length: the
	// checkpoint of a copy, written at the same clock, would do it too;
	// here the store's own pack reader builds it.
	src := openStore(t, dir, &packfs.Options{ReadOnly: true})
	other := t.TempDir()
	d := openStore(t, other, &packfs.Options{CheckpointBytes: -1})
	for i := range 50 {
		name := fmt.Sprintf("c%d", i)
		fi, err := src.Stat(name)
		mustDo(t, err)
		mustDo(t, d.WriteFile(name, bytes.Repeat([]byte{'C'}, 1000), 0o644))
		mustDo(t, d.Chtimes(name, fi.ModTime(), fi.ModTime()))
	}
	fi, err := src.Stat(".")
	mustDo(t, err)
	mustDo(t, d.Chtimes(".", fi.ModTime(), fi.ModTime()))
	mustDo(t, d.Checkpoint())
	mustDo(t, d.Close())
	mustDo(t, src.Close())
	names, err := filepath.Glob(filepath.Join(other, "*.pack"))
	mustDo(t, err)
	repl, err := os.ReadFile(names[0])
	mustDo(t, err)
	if len(repl) != len(data) || bytes.Equal(repl, data) {
		t.Fatalf("replacement of %d bytes for a pack of %d", len(repl), len(data))
	}
	mustDo(t, os.WriteFile(pack, repl, 0o644))
	wantCorrupt(t, dir)
}

// TestIssue14PackTruncated: the pack loses its tail.
func TestIssue14PackTruncated(t *testing.T) {
	dir, _, pack := damagedStore(t)
	fi, err := os.Stat(pack)
	mustDo(t, err)
	mustDo(t, os.Truncate(pack, fi.Size()/2))
	wantCorrupt(t, dir)
}

// TestIssue14ManifestMissingPack: the manifest names a pack that is gone.
func TestIssue14ManifestMissingPack(t *testing.T) {
	dir, _, pack := damagedStore(t)
	mustDo(t, os.Remove(pack))
	wantCorrupt(t, dir)
}

// TestIssue14ReadOnlyBesideCheckpoints opens the store read-only, again
// and again, while a writer commits transactions and checkpoints and
// flattens after every few: every open must succeed and show a state the
// writer made whole, at least as new as the last it acknowledged before
// the open began.
func TestIssue14ReadOnlyBesideCheckpoints(t *testing.T) {
	t.Run("host", func(t *testing.T) { readOnlyBesideCheckpoints(t, t.TempDir(), nil) })
	// Packs read through the file system rather than mapped.
	t.Run("memfs", func(t *testing.T) { readOnlyBesideCheckpoints(t, "", vfstest.NewMemFS()) })
}

func readOnlyBesideCheckpoints(t *testing.T, dir string, fsys vfs.FS) {
	s := openStore(t, dir, &packfs.Options{CheckpointBytes: 2 << 10, MaxPacks: 3, FS: fsys})
	mustDo(t, s.Mkdir("k", 0o755))
	mustDo(t, s.WriteFile("count", []byte("0"), 0o644))
	mustDo(t, s.Sync())
	var acked, issued atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := int64(1); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			issued.Store(i)
			err := s.Update(func(tx *packfs.Tx) error {
				v := []byte(strconv.FormatInt(i, 10))
				if err := tx.WriteFile(fmt.Sprintf("k/%d", i%10), append(v, bytes.Repeat([]byte{' '}, 200)...), 0o644); err != nil {
					return err
				}
				return tx.WriteFile("count", v, 0o644)
			})
			if err != nil {
				t.Error(err)
				return
			}
			acked.Store(i)
			if i%7 == 0 {
				if err := s.Checkpoint(); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	opens := 400
	if testsize.Short() || raceEnabled {
		opens = 60
	}
	// Open at least opens times, and until the writer has checkpointed
	// a dozen times.
	for n := 0; n < opens || acked.Load() < 100 && n < 100*opens; n++ {
		lo := acked.Load()
		r, err := packfs.Open(dir, &packfs.Options{ReadOnly: true, FS: fsys})
		if err != nil {
			t.Errorf("read-only open %d: %v", n, err)
			break
		}
		hi := issued.Load()
		data, err := r.ReadFile("count")
		var c int64
		if err == nil {
			c, err = strconv.ParseInt(string(data), 10, 64)
		}
		if err == nil && (c < lo || c > hi) {
			err = fmt.Errorf("count %d, but %d was acknowledged before the open and %d the last issued", c, lo, hi)
		}
		if err == nil && c > 0 {
			var k []byte
			if k, err = r.ReadFile(fmt.Sprintf("k/%d", c%10)); err == nil && string(bytes.TrimRight(k, " ")) != string(data) {
				err = fmt.Errorf("count %d beside k/%d holding %q: a transaction seen in part", c, c%10, bytes.TrimRight(k, " "))
			}
		}
		r.Close()
		if err != nil {
			t.Errorf("read-only open %d: %v", n, err)
			break
		}
	}
	close(stop)
	wg.Wait()
	if acked.Load() < 100 {
		t.Fatalf("the writer committed only %d transactions", acked.Load())
	}
}

// TestIssue14DamageEveryFile runs the crash tests' workload to its end,
// every unit acknowledged by the final Close, and then damages each file
// of the store in turn: removed, emptied, cut in half. No crash explains
// any of these, so an open must either refuse with ErrCorrupt or give
// the whole final state; a read-only open must fail or give that state.
func TestIssue14DamageEveryFile(t *testing.T) {
	m := vfstest.NewMemFS()
	s, err := packfs.Open("", &packfs.Options{FS: m, CheckpointBytes: -1})
	mustDo(t, err)
	mustDo(t, crashWorkload(s, func() {}, func() {}))
	s, err = packfs.Open("", &packfs.Options{FS: m, ReadOnly: true})
	mustDo(t, err)
	want := dump(t, s, false)
	mustDo(t, s.Close())
	refused := 0
	for _, name := range m.Files() {
		data, _ := m.Contents(name)
		for _, damage := range []string{"removed", "emptied", "halved"} {
			d := m.Recover(vfstest.Torn{})
			switch damage {
			case "removed":
				mustDo(t, d.Remove(name))
			case "emptied":
				d.SetContents(name, nil)
			case "halved":
				d.SetContents(name, data[:len(data)/2])
			}
			for _, ro := range []bool{true, false} {
				s, err := packfs.Open("", &packfs.Options{FS: d, ReadOnly: ro})
				if err != nil {
					if !ro && !errors.Is(err, packfs.ErrCorrupt) {
						t.Errorf("%s %s: open: %v, want ErrCorrupt", name, damage, err)
					}
					refused++
					continue
				}
				if got := dump(t, s, false); got != want {
					t.Errorf("%s %s (read-only %v): opened without error, but the tree lost acknowledged changes", name, damage, ro)
				}
				s.Close()
			}
		}
	}
	t.Logf("%d files, %d damaged opens refused", len(m.Files()), refused)
}

// TestIssue14Version1Manifest: a store whose manifest is of version 1
// (packs listed by name alone) still opens whole, and its next checkpoint
// writes version 2 with every pack's size and sum.
func TestIssue14Version1Manifest(t *testing.T) {
	dir, _, _ := damagedStore(t)
	p := filepath.Join(dir, "MANIFEST")
	data, err := os.ReadFile(p)
	mustDo(t, err)
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		f := strings.Fields(line)
		switch f[0] {
		case "packfs-manifest":
			line = "packfs-manifest 1"
		case "pack":
			line = "pack " + f[1]
		case "crc32c":
			continue
		}
		b.WriteString(line + "\n")
	}
	v1 := b.String()
	v1 += fmt.Sprintf("crc32c %08x\n", crc32.Checksum([]byte(v1), crc32.MakeTable(crc32.Castagnoli)))
	mustDo(t, os.WriteFile(p, []byte(v1), 0o644))
	s := openStore(t, dir, nil)
	names, err := s.ReadDir(".")
	mustDo(t, err)
	if len(names) != 70 {
		t.Fatalf("version-1 store: %d names, want 70", len(names))
	}
	mustDo(t, s.WriteFile("after", nil, 0o644))
	mustDo(t, s.Checkpoint())
	mustDo(t, s.Close())
	data, err = os.ReadFile(p)
	mustDo(t, err)
	if !strings.HasPrefix(string(data), "packfs-manifest 2\n") || strings.Count(string(data), "\npack ") != 2 {
		t.Fatalf("manifest after a checkpoint:\n%s", data)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "pack ") && len(strings.Fields(line)) != 4 {
			t.Fatalf("pack line without size and sum: %q", line)
		}
	}
	s = openStore(t, dir, nil)
	if names, err = s.ReadDir("."); err != nil || len(names) != 71 {
		t.Fatalf("after the upgrade: %d names, %v", len(names), err)
	}
}

// TestIssue14ManifestHostilePackLines: a manifest whose checksum holds but
// whose pack line lies about the pack, or does not parse, is refused.
func TestIssue14ManifestHostilePackLines(t *testing.T) {
	dir, _, pack := damagedStore(t)
	p := filepath.Join(dir, "MANIFEST")
	orig, err := os.ReadFile(p)
	mustDo(t, err)
	var line string
	for _, l := range strings.Split(string(orig), "\n") {
		if strings.HasPrefix(l, "pack ") {
			line = l
		}
	}
	f := strings.Fields(line)
	if len(f) != 4 {
		t.Fatalf("pack line %q", line)
	}
	name := filepath.Base(pack)
	for _, bad := range []string{
		"pack " + name + " " + f[2] + " 00000000",              // another sum
		"pack " + name + " 1 " + f[3],                          // another size
		"pack " + name + " 99999999999999999999999 " + f[3],    // a size past int64
		"pack " + name + " -" + f[2] + " " + f[3],              // a negative size
		"pack " + name + " " + f[2] + " 1a2b",                  // a short sum
		"pack " + name + " " + f[2] + " zzzzzzzz",              // not hex
		"pack " + name + " " + f[2],                            // no sum
		"pack " + name,                                         // a version-1 line
		"pack " + name + " " + f[2] + " " + f[3] + " extra",    // a field too many
		"pack " + name + "  " + f[2] + " " + f[3],              // two spaces
		"pack ../" + name + " " + f[2] + " " + f[3],            // outside the directory
		"pack MANIFEST " + f[2] + " " + f[3],                   // not a pack
		"pack pack-ffffffffffffffff.pack " + f[2] + " " + f[3], // a pack that does not exist
	} {
		body := strings.Replace(string(orig[:strings.LastIndex(string(orig), "crc32c ")]), line, bad, 1)
		body += fmt.Sprintf("crc32c %08x\n", crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli)))
		mustDo(t, os.WriteFile(p, []byte(body), 0o644))
		for _, ro := range []bool{true, false} {
			s, err := packfs.Open(dir, &packfs.Options{ReadOnly: ro})
			if err == nil {
				s.Close()
				t.Errorf("%q (read-only %v): opened", bad, ro)
			} else if !errors.Is(err, packfs.ErrCorrupt) {
				t.Errorf("%q (read-only %v): %v, want ErrCorrupt", bad, ro, err)
			}
		}
	}
	mustDo(t, os.WriteFile(p, orig, 0o644))
	openStore(t, dir, nil)
}

// TestIssue14ReadOnlyBesideReopens: read-only opens beside a writer that
// closes and reopens the store again and again, each open cutting the
// segment's preallocated zeros and syncing it, each close sealing the
// slot, must all succeed and see a whole transaction.
func TestIssue14ReadOnlyBesideReopens(t *testing.T) {
	dir := t.TempDir()
	opts := &packfs.Options{CheckpointBytes: 4 << 10}
	s, err := packfs.Open(dir, opts)
	mustDo(t, err)
	mustDo(t, s.WriteFile("a", []byte("0"), 0o644))
	mustDo(t, s.WriteFile("b", []byte("0"), 0o644))
	mustDo(t, s.Close())
	stop := make(chan struct{})
	done := make(chan error)
	go func() {
		var err error
		defer func() { done <- err }()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var s *packfs.Store
			if s, err = packfs.Open(dir, opts); err != nil {
				return
			}
			for j := range 5 {
				v := []byte(strconv.Itoa(i*10 + j))
				err = s.Update(func(tx *packfs.Tx) error {
					if err := tx.WriteFile("a", v, 0o644); err != nil {
						return err
					}
					return tx.WriteFile("b", v, 0o644)
				})
				if err != nil {
					s.Close()
					return
				}
			}
			if err = s.Close(); err != nil {
				return
			}
		}
	}()
	opens := 300
	if testsize.Short() || raceEnabled {
		opens = 50
	}
	for n := range opens {
		r, err := packfs.Open(dir, &packfs.Options{ReadOnly: true})
		if err != nil {
			t.Errorf("read-only open %d: %v", n, err)
			break
		}
		a, err1 := r.ReadFile("a")
		b, err2 := r.ReadFile("b")
		r.Close()
		if err1 != nil || err2 != nil || string(a) != string(b) {
			t.Errorf("read-only open %d: a %q %v, b %q %v", n, a, err1, b, err2)
			break
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
