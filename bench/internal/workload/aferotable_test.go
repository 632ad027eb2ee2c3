package workload

import (
	"testing"
)

// TestTable runs every row of the afero table once on every column that
// takes part in it, and checks which columns take part: union-lower only
// in the rows whose files exist before.
func TestTable(t *testing.T) {
	for _, row := range TableRows(50, 2) {
		t.Run(row.Name, func(t *testing.T) {
			var got []string
			for _, col := range TableColumns() {
				fsys, names, err := col.Setup(row, t.TempDir())
				if err != nil {
					t.Fatalf("%s: %v", col.Name, err)
				}
				if fsys == nil {
					continue
				}
				got = append(got, col.Name)
				if len(names) != row.Files {
					t.Errorf("%s: %d names, want %d", col.Name, len(names), row.Files)
				}
				err = Join(row.Prep(fsys, names), row.Run(fsys, names, 1), fsys.Close())
				if err != nil {
					t.Errorf("%s: %v", col.Name, err)
				}
			}
			want := 5
			if row.Lower {
				want = 6
			}
			if len(got) != want {
				t.Errorf("columns %v, want %d of them", got, want)
			}
		})
	}
}
