package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sptool/sptool/export"
	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
)

func init() {
	register(&command{
		name:     "export",
		synopsis: "write the logical state as Parquet (clink's projections), JSON Lines or CSV for analytics",
		usage:    "PATH -o OUT [--format parquet|jsonl|csv] [--projection canonical|query] [--rules FILE] [--per-file] [--force]",
		run:      runExport,
	})
}

// exportFormatOf infers the format from the output's extension.
func exportFormatOf(out string) export.Format {
	switch strings.ToLower(filepath.Ext(out)) {
	case ".jsonl", ".ndjson", ".json":
		return export.JSONL
	case ".csv":
		return export.CSV
	}
	if out == "-" {
		return export.JSONL
	}
	return export.Parquet
}

// namedFormat returns the format an output's extension names, if it
// names one (.parquet, .jsonl, .ndjson, .json, .csv).
func namedFormat(out string) (export.Format, bool) {
	if strings.EqualFold(filepath.Ext(out), ".parquet") {
		return export.Parquet, true
	}
	if f := exportFormatOf(out); f != export.Parquet {
		return f, out != "-"
	}
	return "", false
}

func runExport(ctx context.Context, s *Streams, args []string) int {
	c := commands["export"]
	fs := flagSet(c)
	out := fs.StringP("out", "o", "", "output file (required; never inside the input); - writes jsonl or csv to stdout")
	format := fs.String("format", "", "parquet, jsonl or csv (default: from the output's extension, else parquet; jsonl for -o -)")
	projection := fs.String("projection", "", "Parquet columns: canonical (clink's state-export projection, bytes) or query (clink's state-query columns plus decoded key and value) (default canonical)")
	rulesPath := fs.StringP("rules", "r", "", "rule file whose slots: declarations decode keys and values (query projection, jsonl, csv); its rules are not applied")
	perFile := fs.Bool("per-file", false, "every stored row of every file (with its subtask) instead of the logical union")
	compression := fs.String("compression", export.DefaultCompression, "Parquet compression: snappy, zstd, gzip, lz4raw or none")
	rowGroup := intFlag(fs, "row-group-rows", export.DefaultRowGroupRows, "maximum rows per Parquet row group")
	force := fs.Bool("force", false, "replace an existing output")
	allowUnverified := fs.Bool("allow-unverified", false, "accept payloads without a sidecar (as CLINK_ALLOW_UNVERIFIED_CHECKPOINTS does)")
	tempDir := fs.String("temp-dir", "", "where a large file in clink's hash-map order is sorted, a large changelog replayed, and a payload compressed as a whole decompressed, through temporary files (default: the nearest existing directory above the output; with -o -, the system's temporary directory)")
	of := addOpenFlags(fs)
	if done, code := parse(c, fs, s, args, exactly(1)); done {
		return code
	}
	if *out == "" {
		return usageError(s, c, errors.New("-o/--out is required"))
	}
	if err := checkTempDir(*tempDir, fs.Args()...); err != nil {
		return usageError(s, c, err)
	}
	opts := export.Options{Format: export.Format(*format), Projection: export.Projection(*projection), PerFile: *perFile, Compression: *compression, RowGroupRows: *rowGroup, Tool: "sptool/" + Version, TempDir: *tempDir}
	if opts.Format == "" {
		opts.Format = exportFormatOf(*out)
	}
	switch opts.Format {
	case export.Parquet, export.JSONL, export.CSV:
	default:
		return usageError(s, c, fmt.Errorf("--format must be parquet, jsonl or csv, not %q", *format))
	}
	if comp := savepoint.CompressionOfName(*out); comp != "" && *out != "-" {
		// export writes no file compressed as a whole: a name that says
		// so would send a reader to decompress what is not compressed
		// (Parquet compresses its pages itself: --compression).
		return usageError(s, c, fmt.Errorf("-o %s names a file compressed with %s, which export does not write: name it for its format (.parquet, .jsonl, .csv) and compress it afterwards; Parquet compresses its pages itself (--compression)", *out, comp))
	}
	if named, ok := namedFormat(*out); ok && named != opts.Format {
		// A reader that goes by the name would take the file for another
		// format.
		return usageError(s, c, fmt.Errorf("--format %s, but -o %s names a %s file: name the output for its format, or give --format %s", opts.Format, *out, named, named))
	}
	switch {
	case opts.Projection != "" && opts.Projection != export.Canonical && opts.Projection != export.Query:
		return usageError(s, c, fmt.Errorf("--projection must be canonical or query, not %q", *projection))
	case opts.Projection != "" && opts.Format != export.Parquet:
		return usageError(s, c, fmt.Errorf("--projection applies to --format parquet only (jsonl and csv always hold the decoded row model)"))
	case *rulesPath != "" && opts.Format == export.Parquet && opts.Projection != export.Query:
		return usageError(s, c, fmt.Errorf("--rules decodes keys and values for --projection query, jsonl and csv; the canonical projection holds bytes only"))
	case *out == "-" && opts.Format == export.Parquet:
		return usageError(s, c, fmt.Errorf("-o - writes jsonl or csv only; give a file for parquet"))
	case opts.Format != export.Parquet && (fs.Changed("compression") || fs.Changed("row-group-rows")):
		return usageError(s, c, fmt.Errorf("--compression and --row-group-rows apply to --format parquet only (jsonl and csv are written uncompressed, row by row)"))
	case *rowGroup <= 0:
		return usageError(s, c, fmt.Errorf("--row-group-rows must be positive"))
	}
	if _, ok := export.Codecs[opts.Compression]; !ok {
		return usageError(s, c, fmt.Errorf("--compression must be snappy, zstd, gzip, lz4raw or none, not %q", *compression))
	}
	if *rulesPath != "" {
		set, err := rules.LoadDeclarations(*rulesPath)
		if err != nil {
			return fail(s, c.name, err)
		}
		if *out != "-" {
			// --force or not, the output does not replace the rule file
			// (nor a keys file it names), as apply's does not.
			if err := checkRuleFilesApart(set, nil, *out, ""); err != nil {
				return fail(s, c.name, err)
			}
		}
		opts.Rules = set
	}
	if *out != "-" {
		err := savepoint.CheckOutputPath(savepoint.InputRoot(fs.Arg(0)), *out)
		if err == nil {
			err = export.CheckOutput(*out, *force)
		}
		if err == nil {
			err = checkWritableAbove("-o", *out)
		}
		if err != nil {
			return fail(s, c.name, err)
		}
	}
	sp, err := openUntil(ctx, func() (*savepoint.Savepoint, error) {
		return of.openWith(fs.Arg(0), savepoint.OpenOptions{RequireValid: true, AllowMissingSidecar: *allowUnverified, Columnar: true, TempDir: openTempDir(*tempDir, *out)})
	})
	if err != nil {
		return fail(s, c.name, err)
	}
	defer sp.Close()
	if *out != "-" {
		if err := sp.CheckFilesApart(*out); err != nil {
			return fail(s, c.name, err)
		}
	}
	var res *export.Result
	if *out == "-" {
		res, err = export.Write(ctx, s.Out, sp, opts)
	} else {
		res, err = export.WriteFile(ctx, *out, sp, opts, *force)
	}
	if err != nil {
		return fail(s, c.name, err)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(s.Err, "sptool export: warning: %s\n", w)
	}
	what := string(opts.Format)
	if opts.Format == export.Parquet {
		proj := opts.Projection
		if proj == "" {
			proj = export.Canonical
		}
		what += fmt.Sprintf(" %s, %d row group%s", proj, res.RowGroups, pluralS(res.RowGroups))
	}
	view := "logical rows"
	if opts.PerFile {
		view = "stored rows"
	}
	dest := *out
	if dest == "-" {
		dest = "stdout"
	}
	fmt.Fprintf(s.Err, "sptool export: %s -> %s (%s, %d bytes, %d operator%s, %d slot%s, %d %s)\n", fs.Arg(0), dest, what, res.Bytes, res.Operators, pluralS(res.Operators), res.Slots, pluralS(res.Slots), res.Rows, view)
	return ExitOK
}

// pluralS is the "s" of a count of n things in English: none for one.
func pluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
