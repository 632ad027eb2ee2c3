package vfstest_test

import (
	"fmt"
	"os"

	"github.com/packfs/packfs/vfs/vfstest"
)

// A power cut keeps what was synced and loses the rest.
func ExampleMemFS_Recover() {
	disk := vfstest.NewMemFS()
	f, _ := disk.OpenFile("log", os.O_WRONLY|os.O_CREATE, 0o644)
	f.Write([]byte("synced "))
	f.Sync()
	disk.SyncDir() // the name too
	f.Write([]byte("lost"))

	data, _ := disk.Recover(vfstest.Torn{}).Contents("log")
	fmt.Printf("%q\n", data)
	// Output: "synced "
}
