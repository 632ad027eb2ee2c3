package packfs_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/internal/testsize"
)

const killDirEnv = "PACKFS_KILL_TEST_DIR"

// TestStoreKillChild is the child of TestStoreSIGKILL: it commits
// transactions into the store in $PACKFS_KILL_TEST_DIR until killed,
// printing "ack N" once transaction N has committed.
func TestStoreKillChild(t *testing.T) {
	dir := os.Getenv(killDirEnv)
	if dir == "" {
		return // run only as the child
	}
	s, err := packfs.Open(dir, &packfs.Options{CheckpointBytes: 16 << 10})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	n := 0
	if data, err := s.ReadFile("count"); err == nil {
		n, _ = strconv.Atoi(string(data))
	}
	s.MkdirAll("k", 0o755)
	for i := n + 1; ; i++ {
		err := s.Update(func(tx *packfs.Tx) error {
			if err := tx.WriteFile("count", []byte(strconv.Itoa(i)), 0o644); err != nil {
				return err
			}
			return tx.WriteFile(fmt.Sprintf("k/%d", i%20), []byte(strings.Repeat(strconv.Itoa(i)+" ", 20)), 0o644)
		})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Printf("ack %d\n", i)
	}
}

// TestStoreSIGKILL runs a child process that commits transactions and
// kills it with SIGKILL at random moments, 50 times; after each kill the
// reopened store must hold exactly a prefix of the transactions that
// includes every one the child reported committed.
func TestStoreSIGKILL(t *testing.T) {
	if testsize.Short() {
		t.Skip("runs 50 child processes")
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 3))
	total := 0
	for round := range 50 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStoreKillChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), killDirEnv+"="+dir)
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
		time.Sleep(time.Duration(20+r.IntN(150)) * time.Millisecond)
		cmd.Process.Kill()
		last := <-acked
		cmd.Wait()

		s, err := packfs.Open(dir, nil)
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		n := 0
		if data, err := s.ReadFile("count"); err == nil {
			n, _ = strconv.Atoi(string(data))
		}
		if n < last {
			t.Fatalf("round %d: the store holds %d transactions, the child acknowledged %d", round, n, last)
		}
		for k := range 20 {
			// The last transaction ≤ n that wrote key k.
			want := n - ((n-k)%20+20)%20
			data, err := s.ReadFile(fmt.Sprintf("k/%d", k))
			switch {
			case want <= 0 && err == nil:
				t.Fatalf("round %d: k/%d exists before any transaction wrote it", round, k)
			case want > 0 && string(data) != strings.Repeat(strconv.Itoa(want)+" ", 20):
				t.Fatalf("round %d: k/%d = %.20q, want transaction %d's (store at %d): %v", round, k, data, want, n, err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		total = n
	}
	names, _ := os.ReadDir(dir)
	var list []string
	for _, n := range names {
		list = append(list, n.Name())
	}
	t.Logf("50 kills, %d transactions committed; the directory holds %s", total, list)
}
