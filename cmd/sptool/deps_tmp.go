//go:build tools

package main

import (
	_ "github.com/apache/arrow-go/v18/arrow/ipc"
	_ "github.com/apache/arrow-go/v18/parquet/pqarrow"
	_ "github.com/dsnet/compress/bzip2"
	_ "github.com/expr-lang/expr"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/pierrec/lz4/v4"
	_ "github.com/rogpeppe/go-internal/testscript"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/pflag"
	_ "github.com/ulikunitz/xz"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/term"
)

func main() {}
