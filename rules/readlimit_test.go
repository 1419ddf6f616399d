package rules

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Rule files and keys files are read only when they are regular files
// within their size limits: a device would be read without end (lint of
// /dev/zero grew to the machine's memory), and a huge file would be read
// whole before any check.
func TestRuleAndKeysFileLimits(t *testing.T) {
	dir := t.TempDir()
	sparse := func(name string, size int64) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil { // sparse: no disk used
			t.Fatal(err)
		}
		return p
	}
	big := sparse("big.yaml", MaxRuleFileSize+1)
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "more than the 67108864 bytes allowed") {
		t.Errorf("rule file over the limit: %v", err)
	}
	sparse("keys.txt", MaxKeysFileSize+1)
	rules := filepath.Join(dir, "r.yaml")
	if err := os.WriteFile(rules, []byte("version: 1\nrules:\n  - purge_keys: {keys_file: keys.txt, codec: string}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(rules); err == nil || !strings.Contains(err.Error(), "more than the 1073741824 bytes allowed") {
		t.Errorf("keys file over the limit: %v", err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "is a directory, not a regular file") {
		t.Errorf("rule file a directory: %v", err)
	}
	if runtime.GOOS == "windows" {
		return
	}
	if _, err := Load("/dev/zero"); err == nil || !strings.Contains(err.Error(), "/dev/zero is a character device, not a regular file") {
		t.Errorf("rule file a device: %v", err)
	}
	if err := os.WriteFile(rules, []byte("version: 1\nrules:\n  - purge_keys: {keys_file: /dev/zero, codec: string}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(rules); err == nil || !strings.Contains(err.Error(), `read keys file "/dev/zero": /dev/zero is a character device`) {
		t.Errorf("keys file a device: %v", err)
	}
}
