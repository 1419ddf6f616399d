package cli

import (
	"strings"
	"testing"

	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// A list with no element is written [], never null, however deep; a list
// marked omitempty is left out, and bytes stay base64.
func TestWriteJSONEmptyLists(t *testing.T) {
	type inner struct {
		Names []string `json:"names"`
	}
	type outer struct {
		List    []int    `json:"list"`
		Omitted []int    `json:"omitted,omitempty"`
		Bytes   []byte   `json:"bytes"`
		Inner   *inner   `json:"inner"`
		Inners  []inner  `json:"inners"`
		Any     any      `json:"any"`
		None    *inner   `json:"none"`
		hidden  []string // unexported: left alone
	}
	var b strings.Builder
	if err := writeJSON(&b, &outer{Inner: &inner{}, Inners: []inner{{}}, Any: &inner{}}); err != nil {
		t.Fatal(err)
	}
	want := `{"list":[],"bytes":null,"inner":{"names":[]},"inners":[{"names":[]}],"any":{"names":[]},"none":null}`
	if got := strings.Join(strings.Fields(b.String()), ""); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	// The reports' lists: a plan's version-map changes, a file's marker
	// subtasks.
	b.Reset()
	if err := writeJSON(&b, &transform.Report{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `"version_map_changes": null`) || !strings.Contains(b.String(), `"version_map_changes": []`) {
		t.Errorf("report: %s", b.String())
	}
	b.Reset()
	if err := writeJSON(&b, &savepoint.Summary{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"completed_subtasks": []`) {
		t.Errorf("summary: %s", b.String())
	}
}
