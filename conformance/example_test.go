package conformance_test

import (
	"fmt"

	"github.com/packfs/packfs/conformance"
)

// The ready-made trees a read-only backend is asked to hold.
func Example_trees() {
	for _, tree := range conformance.Trees() {
		if tree.Name == "wide" || tree.Name == "empty" {
			fmt.Println(tree.Name)
			continue
		}
		fmt.Println(tree.Name, len(tree.Entries))
	}
	// Output:
	// empty
	// flat 16
	// deep 56
	// wide
	// symlinks 18
	// unicode 13
	// sizes 9
	// duplicates 62
}
