package savepoint

import "flag"

// update rewrites golden files and the generated bad-input corpus
// (`go test ./savepoint -update`, or `make golden`).
var update = flag.Bool("update", false, "rewrite golden files and the bad-input corpus in testdata")
