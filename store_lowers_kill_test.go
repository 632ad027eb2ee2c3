package packfs_test

import (
	"bufio"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
)

const lowersKillEnv = "PACKFS_LOWERS_KILL_DIR"

// lowerSteps is how many steps the kill test's child takes at most: one
// per root file and directory of its lower.
const lowerSteps = 1000

// lowerKillPack writes the kill test's lower, once, into dir.
func lowerKillPack(t testing.TB, dir string) string {
	p := filepath.Join(dir, "lower.pack")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	m := mem.New()
	for i := range lowerSteps + 1 {
		mustDo(t, m.WriteFile(fmt.Sprintf("f%03d", i), []byte(fmt.Sprintf("file %d", i)), 0o644))
		mustDo(t, m.MkdirAll(fmt.Sprintf("d%03d/s", i), 0o755))
		mustDo(t, m.WriteFile(fmt.Sprintf("d%03d/a", i), []byte(fmt.Sprintf("a %d", i)), 0o644))
		mustDo(t, m.WriteFile(fmt.Sprintf("d%03d/s/c", i), []byte(fmt.Sprintf("c %d", i)), 0o644))
	}
	writePack(t, dir, "lower.pack", m.Snapshot())
	return p
}

// lowerChanger is what a step changes through: a transaction of the
// store, or the model union.
type lowerChanger interface {
	Remove(name string) error
	RemoveAll(name string) error
	Rename(oldname, newname string) error
	Mkdir(name string, perm fs.FileMode) error
	WriteFile(name string, data []byte, perm fs.FileMode) error
}

// lowerStep makes step i: it removes, renames over or away, or replaces
// names that live in the lower, and records i in "count".
func lowerStep(c lowerChanger, i int) error {
	f, d := fmt.Sprintf("f%03d", i), fmt.Sprintf("d%03d", i)
	var err error
	switch i % 4 {
	case 0:
		err = c.Remove(f)
	case 1:
		err = c.Rename(d, "m"+d)
	case 2:
		if err = c.RemoveAll(d); err == nil {
			if err = c.Mkdir(d, 0o700); err == nil {
				err = c.WriteFile(d+"/new", []byte(d), 0o644)
			}
		}
	case 3:
		if err = c.Rename(f, fmt.Sprintf("d%03d/a", i-3)); err == nil {
			err = c.Remove(fmt.Sprintf("d%03d/s/c", i))
		}
	}
	if err != nil {
		return err
	}
	return c.WriteFile("count", []byte(strconv.Itoa(i)), 0o644)
}

// TestIssue17StoreLowersKillChild is the child of
// TestIssue17StoreLowersSIGKILL: it takes steps over the lower in
// $PACKFS_LOWERS_KILL_DIR, each a synced transaction, printing "ack N"
// once step N is durable, with checkpoints and flattens along the way.
func TestIssue17StoreLowersKillChild(t *testing.T) {
	dir := os.Getenv(lowersKillEnv)
	if dir == "" {
		return // run only as the child
	}
	lower, err := packreader.Open(filepath.Join(dir, "lower.pack"))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	s, err := packfs.Open(filepath.Join(dir, "store"), &packfs.Options{
		CheckpointBytes: 4 << 10, MaxPacks: 3, Lowers: []fs.FS{lower},
	})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	n := 0
	if data, err := s.ReadFile("count"); err == nil {
		n, _ = strconv.Atoi(string(data))
	}
	for i := n + 1; i <= lowerSteps; i++ {
		err := s.Update(func(tx *packfs.Tx) error { return lowerStep(tx, i) })
		if err == nil {
			err = s.Sync()
		}
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Printf("ack %d\n", i)
	}
	time.Sleep(time.Hour) // until killed
}

// TestIssue17StoreLowersSIGKILL kills, 40 times at random moments (10 in
// the quick run), a
// child that removes, renames and replaces names of a lower pack; after
// each kill the store reopens over the same lower to the tree of exactly
// the steps it counts, at least every one the child acknowledged.
func TestIssue17StoreLowersSIGKILL(t *testing.T) {
	kills := 40
	if testsize.Short() {
		kills = 10
	}
	dir := t.TempDir()
	lower, err := packreader.Open(lowerKillPack(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	defer lower.Close()
	model := packfs.New(mem.New(), lower)
	modelAt := 0
	r := rand.New(rand.NewPCG(17, 17))
	for round := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^TestIssue17StoreLowersKillChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), lowersKillEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked := make(chan int)
		go func() {
			last := 0
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if n, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
					last, _ = strconv.Atoi(n)
				} else if strings.HasPrefix(sc.Text(), "error") {
					t.Errorf("round %d: child: %s", round, sc.Text())
				}
			}
			acked <- last
		}()
		time.Sleep(time.Duration(10+r.IntN(60)) * time.Millisecond)
		cmd.Process.Kill()
		last := <-acked
		cmd.Wait()

		s, err := packfs.Open(filepath.Join(dir, "store"), &packfs.Options{Lowers: []fs.FS{lower}})
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		n := 0
		if data, err := s.ReadFile("count"); err == nil {
			n, _ = strconv.Atoi(string(data))
		}
		if n < last {
			t.Fatalf("round %d: the store holds %d steps, the child acknowledged %d", round, n, last)
		}
		t.Logf("round %d: %d steps acknowledged, %d held", round, last, n)
		for ; modelAt < n; modelAt++ {
			mustDo(t, lowerStep(model, modelAt+1))
		}
		if got, want := dump(t, s, false), dump(t, model, false); got != want {
			t.Fatalf("round %d: after %d steps the store holds\n%s\nwant\n%s", round, n, got, want)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	names, _ := os.ReadDir(filepath.Join(dir, "store"))
	var list []string
	for _, n := range names {
		list = append(list, n.Name())
	}
	t.Logf("%d kills, %d steps over the lower; the store holds %s", kills, modelAt, list)
}
