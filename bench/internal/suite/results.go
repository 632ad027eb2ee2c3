package suite

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// savedResults is the JSON form of Results: every sample, so that the
// report can be written again (-render) after its prose changes, without
// running the suite again.
type savedResults struct {
	Start, End time.Time
	Config     *Config
	Machine    Machine
	EndLoad    string
	Args       []string
	Errors     []string
	Cats       []string
	Tables     []savedTable
}

type savedTable struct {
	Cat, ID, Title, Unit string
	Kind                 tableKind
	Notes                []string
	NoBaseline           bool   `json:",omitempty"`
	Base                 string `json:",omitempty"`
	Paired               bool   `json:",omitempty"`
	Rows                 []*Row
}

// SaveResults writes res as JSON to name.
func SaveResults(res *Results, name string) error {
	s := savedResults{Start: res.Start, End: res.End, Config: res.Config, Machine: res.Machine,
		EndLoad: res.EndLoad, Args: res.Args, Errors: res.Errors}
	for _, c := range res.Cats {
		s.Cats = append(s.Cats, c.Name)
	}
	for _, t := range res.Tables {
		s.Tables = append(s.Tables, savedTable{Cat: t.Cat.Name, ID: t.ID, Title: t.Title, Unit: t.Unit,
			Kind: t.kind, Notes: t.Notes, NoBaseline: t.NoBaseline, Base: t.Base, Paired: t.Paired, Rows: t.Rows})
	}
	b, err := json.MarshalIndent(s, "", "\t")
	if err != nil {
		return err
	}
	return os.WriteFile(name, append(b, '\n'), 0o644)
}

// LoadResults reads results saved by SaveResults, with the categories as
// registered now (their titles and docs may have changed since).
func LoadResults(name string) (*Results, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var s savedResults
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	res := &Results{Start: s.Start, End: s.End, Config: s.Config, Machine: s.Machine,
		EndLoad: s.EndLoad, Args: s.Args, Errors: s.Errors}
	cats := map[string]*Category{}
	for _, c := range Categories() {
		cats[c.Name] = c
	}
	for _, name := range s.Cats {
		c, ok := cats[name]
		if !ok {
			return nil, fmt.Errorf("%s: unknown category %q", name, name)
		}
		res.Cats = append(res.Cats, c)
	}
	for _, st := range s.Tables {
		c, ok := cats[st.Cat]
		if !ok {
			return nil, fmt.Errorf("%s: unknown category %q", name, st.Cat)
		}
		res.Tables = append(res.Tables, &Table{Cat: c, ID: st.ID, Title: st.Title, Unit: st.Unit, kind: st.Kind,
			Notes: st.Notes, NoBaseline: st.NoBaseline, Base: st.Base, Paired: st.Paired, Rows: st.Rows, places: s.Config.Places})
	}
	return res, nil
}
