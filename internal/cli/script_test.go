package cli

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite golden files and txtar expectations")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"sptool": func() {
			os.Exit(Main(context.Background(), os.Args[1:], &Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
		},
		"mksnap": func() { os.Exit(mksnapMain()) },
	})
}

// TestScripts runs the txtar CLI scripts in testdata/script. $TESTDATA is the
// repository's testdata directory (fixtures and the example tree).
func TestScripts(t *testing.T) {
	td, err := filepath.Abs("../../testdata")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(e *testscript.Env) error {
			e.Setenv("TESTDATA", td)
			e.Setenv("CLINK_STATE_FSYNC", "0")
			return nil
		},
	})
}
