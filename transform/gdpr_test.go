package transform_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sptool/sptool/internal/gen"
	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// TestGDPRErasure purges a list of data subjects from a four-subtask tree of
// several operators and checks the erasure end to end: no row of a subject
// is left in any output file, every other row is stored exactly as before
// (same operator, key, value and subtask), and the audit report names
// exactly the keys found (with their row counts) and not found.
func TestGDPRErasure(t *testing.T) {
	const parallelism = 4
	var (
		opAgg      = savepoint.OperatorIDFromUID("agg")
		opEnricher = savepoint.OperatorIDFromUID("enricher")
		opSrc      = savepoint.OperatorIDFromUID("src")
		opDedup    = uint64(12)
	)
	// Subjects: string keys (user-1 must not take user-10..user-19 with
	// it), int64 ids, and keys that are in no row.
	subjects := []string{"user-7", "user-42", "user-1", "user-150", "ghost"}
	ids := []int64{7, 42, 5000}

	files := map[int][]savepoint.Row{}
	addKeyed := func(op uint64, slot string, uk, v []byte) {
		r := savepoint.Row{Op: op, Key: savepoint.EncodeKeyedKey([]byte(slot), uk), Value: v}
		s := savepoint.SubtaskForKeyGroup(int(r.Key[0]), parallelism)
		files[s] = append(files[s], r)
	}
	var timerKeys [parallelism][][]byte
	for i := 1; i <= 200; i++ {
		uk := []byte("user-" + strconv.Itoa(i))
		addKeyed(opAgg, "counts", i64(int64(i)), i64(int64(i*3)))
		if i%2 == 0 {
			addKeyed(opAgg, "seen", uk, ttl(gen.Now+int64(i), []byte("web")))
		}
		addKeyed(opEnricher, "profile", uk, []byte(fmt.Sprintf(`{"n":%d}`, i)))
		for item := 0; item < i%4; item++ {
			ck := append(append(bytes.Clone(uk), 0x1F), "sku-"+strconv.Itoa(item)...)
			addKeyed(opEnricher, "cart", ck, ttl(gen.Now, i64(int64(item))))
		}
		if i%5 == 0 {
			addKeyed(opDedup, "ids", uk, []byte{1})
		}
		if i%10 == 0 {
			s := savepoint.SubtaskForKeyGroup(savepoint.KeyGroupOf(uk), parallelism)
			timerKeys[s] = append(timerKeys[s], uk)
		}
	}
	// user-42's cart: the expiring map stores its elements under their own
	// key groups, so they scatter over subtasks.
	for _, item := range []string{"sku-a", "sku-b", "sku-c", "sku-d", "sku-e", "sku-f"} {
		addKeyed(opEnricher, "cart", []byte("user-42\x1f"+item), ttl(gen.Now, i64(9)))
	}
	// A raw in-flight buffer (first byte '_': key group 95).
	raw := savepoint.Row{Op: opAgg, Key: []byte("__iterate_inflight__"), Value: []byte("buffered")}
	files[savepoint.SubtaskForKeyGroup(int('_'), parallelism)] = append(files[savepoint.SubtaskForKeyGroup(int('_'), parallelism)], raw)
	for s := range parallelism {
		for p := range 2 {
			files[s] = append(files[s], operatorRow(opSrc, "__kafka_off__:"+strconv.Itoa(p), i64(int64(100*p+s))))
		}
		files[s] = append(files[s], operatorRow(opAgg, "__clink_timers", gen.TimerBlob(timerKeys[s], gen.Now)))
	}
	var vm savepoint.VersionMap
	if err := vm.Set(savepoint.VersionEntry{Op: opAgg, StateType: "Counter", Version: 2, Slot: "counts"}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	in := writeTree(t, filepath.Join(dir, "in"), 11, "job-9", files, vm, savepoint.CompressNone)
	inputRows := readRows(t, in)

	// Independent oracle: which rows belong to a subject.
	isSubject := func(l located) (string, bool) {
		k := savepoint.ParseKey(l.Key)
		if k.Kind != savepoint.KindKeyed {
			return "", false
		}
		for _, s := range subjects {
			if string(k.UserKey) == s || bytes.HasPrefix(k.UserKey, []byte(s+"\x1f")) {
				return s, true
			}
		}
		for _, id := range ids {
			if bytes.Equal(k.UserKey, i64(id)) {
				return strconv.FormatInt(id, 10), true
			}
		}
		return "", false
	}
	perKey := map[string]int64{}
	subtasksOf := map[string]map[int]bool{}
	var want []located
	for _, l := range inputRows {
		if s, ok := isSubject(l); ok {
			perKey[s]++
			if subtasksOf[s] == nil {
				subtasksOf[s] = map[int]bool{}
			}
			subtasksOf[s][l.Subtask] = true
			continue
		}
		want = append(want, l)
	}
	// A subject's timers leave the timer blobs too (user-150 has one): they
	// would fire for the erased key after a restore.
	timersRemoved := int64(0)
	keyTimers := map[string]int64{}
	for i, l := range want {
		if !bytes.Equal(l.Key, []byte("\xff__clink_timers")) {
			continue
		}
		var kept [][]byte
		for _, k := range timerKeys[l.Subtask] {
			if slices.Contains(subjects, string(k)) {
				timersRemoved++
				keyTimers[string(k)]++
				continue
			}
			kept = append(kept, k)
		}
		want[i].Value = gen.TimerBlob(kept, gen.Now)
	}
	if timersRemoved != 1 {
		t.Fatalf("test setup: %d subject timers, want 1 (user-150)", timersRemoved)
	}
	if len(subtasksOf["user-42"]) < 3 {
		t.Fatalf("test setup: user-42's rows are in %d subtasks only, want them scattered", len(subtasksOf["user-42"]))
	}
	if perKey["user-1"] == 0 || perKey["user-150"] == 0 || perKey["ghost"] != 0 || perKey["5000"] != 0 {
		t.Fatalf("test setup: rows per subject %v", perKey)
	}

	set := parseRules(t, `version: 1
slots:
  - {uid: agg, slot: counts, key: int64, value: int64}
  - {uid: agg, slot: seen, key: string, value: string, ttl: true}
  - {uid: enricher, slot: cart, key: string, value: int64, ttl: true, composite: true}
rules:
  - name: erasure request PRIV-1
    purge_keys: {keys_file: subjects.txt}
  - name: erasure request PRIV-1 (numeric ids)
    purge_keys: {keys_file: ids.txt, codec: int64}
`, map[string]string{
		"subjects.txt": "# PRIV-1\nuser-7\nuser-42\nuser-1\nuser-150\nghost\nuser-7\n",
		"ids.txt":      "7\n42\n5000\n",
	})
	out := filepath.Join(dir, "out")
	rep, err := run(t, in, set, transform.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}

	// 1. No row of a subject remains in any output file.
	sp := open(t, out)
	if len(sp.Files) != parallelism {
		t.Fatalf("output has %d files, want %d", len(sp.Files), parallelism)
	}
	got := rowsOf(sp)
	for _, l := range got {
		if s, ok := isSubject(l); ok {
			t.Errorf("row of subject %s remains: %s", s, l)
		}
	}
	// 2. Every other row is unchanged, in the same subtask.
	sameRows(t, "output", got, want)
	if vr := savepoint.Validate(sp, savepoint.ValidateOptions{}); vr.Errors() != 0 {
		t.Errorf("output has %d validation errors", vr.Errors())
	}
	for _, f := range sp.Files {
		if f.Snapshot.Versions.Pack() != vm.Pack() {
			t.Errorf("subtask %d: version map %q, want %q", f.Subtask, f.Snapshot.Versions.Pack(), vm.Pack())
		}
	}

	// 3. The audit lists exactly the keys found, with their rows, and the
	// keys not found, in keys-file order.
	checkAccounting(t, rep, len(inputRows), len(got))
	for i, tc := range []struct {
		keys     []string
		notFound []string
	}{
		{[]string{"user-7", "user-42", "user-1", "user-150"}, []string{"ghost"}},
		{[]string{"7", "42"}, []string{"5000"}},
	} {
		rs := ruleStats(t, rep, i+1)
		p := rs.Purge
		if p == nil {
			t.Fatalf("rule %d has no purge audit", i+1)
		}
		var wantFound []transform.KeyFound
		var total int64
		for _, k := range tc.keys {
			// A key's timers count with it (rule 2's int64 keys have none).
			wantFound = append(wantFound, transform.KeyFound{Key: k, Rows: perKey[k], Timers: keyTimers[k]})
			total += perKey[k]
		}
		if !reflect.DeepEqual(p.Found, wantFound) {
			t.Errorf("rule %d found %+v, want %+v", i+1, p.Found, wantFound)
		}
		if !reflect.DeepEqual(p.NotFound, tc.notFound) {
			t.Errorf("rule %d not found %q, want %q", i+1, p.NotFound, tc.notFound)
		}
		if p.Remaining != 0 {
			t.Errorf("rule %d: %d rows of listed keys remaining", i+1, p.Remaining)
		}
		if p.KeysListed != len(tc.keys)+len(tc.notFound) {
			t.Errorf("rule %d: %d keys listed, want %d (duplicates counted once)", i+1, p.KeysListed, len(tc.keys)+len(tc.notFound))
		}
		if p.KeysFound != len(tc.keys) || p.KeysNotFound != len(tc.notFound) {
			t.Errorf("rule %d: %d keys found and %d not found, want %d and %d", i+1, p.KeysFound, p.KeysNotFound, len(tc.keys), len(tc.notFound))
		}
		// Rule 1 (string keys) rewrites the one timer blob holding user-150's
		// timer; the int64 ids of rule 2 match no timer key.
		wantChanged, wantTimers := int64(0), int64(0)
		if i == 0 {
			wantChanged, wantTimers = 1, timersRemoved
		}
		// A blob the rule changed is a row it matched, as a row it dropped.
		if rs.Matched != total+wantChanged || rs.Dropped != total || rs.Changed != wantChanged || p.TimersRemoved != wantTimers {
			t.Errorf("rule %d: matched %d dropped %d changed %d timers removed %d, want %d, %d, %d, %d", i+1, rs.Matched, rs.Dropped, rs.Changed, p.TimersRemoved, total+wantChanged, total, wantChanged, wantTimers)
		}
	}
	if rep.RowsDropped != int64(len(inputRows)-len(want)) {
		t.Errorf("RowsDropped = %d, want %d", rep.RowsDropped, len(inputRows)-len(want))
	}

	// 4. Asked for the counts alone, the audit gives the same counts, and
	// no lists.
	counted, err := run(t, in, set, transform.Options{DryRun: true, KeyCountsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		p, q := ruleStats(t, rep, i+1).Purge, ruleStats(t, counted, i+1).Purge
		if q.Found != nil || q.NotFound != nil || q.NotFoundHex != nil {
			t.Errorf("rule %d, counts only: lists %v, %v, %v", i+1, q.Found, q.NotFound, q.NotFoundHex)
		}
		if q.KeysListed != p.KeysListed || q.KeysFound != p.KeysFound || q.KeysNotFound != p.KeysNotFound || q.Remaining != p.Remaining || q.TimersRemoved != p.TimersRemoved {
			t.Errorf("rule %d, counts only: %+v, want the counts of %+v", i+1, q, p)
		}
	}
}

// TestPurgeTimerOnlyKeyFound: a listed key whose only data is a timer is
// found (its timer removed), not reported as not found.
func TestPurgeTimerOnlyKeyFound(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.snap")
	blob := savepoint.EncodeTimers(nil, []savepoint.Timer{{Time: 5, Key: []byte("only-timer")}, {Time: 6, Key: []byte("other")}})
	rows := []savepoint.Row{
		{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("s"), []byte("other")), Value: []byte("v")},
		{Op: 7, Key: []byte("\xff__clink_timers"), Value: blob},
	}
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	set := parseRules(t, "version: 1\nrules:\n  - purge_keys: {keys: [only-timer, nobody]}\n", nil)
	rep, err := run(t, in, set, transform.Options{Out: filepath.Join(dir, "out.snap")})
	if err != nil {
		t.Fatal(err)
	}
	p := ruleStats(t, rep, 1).Purge
	if want := []transform.KeyFound{{Key: "only-timer", Rows: 0, Timers: 1}}; !reflect.DeepEqual(p.Found, want) || !slices.Equal(p.NotFound, []string{"nobody"}) || p.TimersRemoved != 1 {
		t.Errorf("audit found %+v, not found %q, timers removed %d; want %+v, [nobody], 1", p.Found, p.NotFound, p.TimersRemoved, want)
	}
}

// TestPurgeAuditHexKeys: a listed key that is not valid UTF-8 shows in the
// audit as 0x and its hex, as a text key written that way does; its bytes
// in hex beside it (key_hex, not_found_hex) tell the two apart.
func TestPurgeAuditHexKeys(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.snap")
	var rows []savepoint.Row
	for _, k := range []string{"\x6d\xfc", "0x6dfc"} {
		rows = append(rows, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("s"), []byte(k)), Value: []byte("v")})
	}
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	set := parseRules(t, "version: 1\nrules:\n  - purge_keys: {keys_file: keys.txt}\n", map[string]string{
		"keys.txt": "\x6d\xfc\n0x6dfc\n\x6e\xfc\n0x6efc\n",
	})
	rep, err := run(t, in, set, transform.Options{Out: filepath.Join(dir, "out.snap")})
	if err != nil {
		t.Fatal(err)
	}
	p := ruleStats(t, rep, 1).Purge
	wantFound := []transform.KeyFound{{Key: "0x6dfc", KeyHex: "6dfc", Rows: 1}, {Key: "0x6dfc", Rows: 1}}
	if !reflect.DeepEqual(p.Found, wantFound) {
		t.Errorf("found %+v, want %+v", p.Found, wantFound)
	}
	if !slices.Equal(p.NotFound, []string{"0x6efc", "0x6efc"}) || !slices.Equal(p.NotFoundHex, []string{"6efc"}) {
		t.Errorf("not found %q (hex %q), want [0x6efc 0x6efc] (hex [6efc])", p.NotFound, p.NotFoundHex)
	}
}

// TestPurgeAuditKeyDigests: under KeyDigests the audit lists each key as
// the SHA-256 of the key as listed (a string key's bytes, those that are
// not UTF-8 too, with no hex form beside them; an int64 key's decimal
// text), or as its HMAC-SHA256 under KeyDigestKey, whose SHA-256 the audit
// gives; its report, as JSON, names no listed key, nor the secret. A
// secret shorter than MinKeyDigestKey is refused before anything is read.
func TestPurgeAuditKeyDigests(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.snap")
	var rows []savepoint.Row
	for _, k := range []string{"\x6d\xfc", "alice"} {
		rows = append(rows, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("s"), []byte(k)), Value: []byte("v")})
	}
	rows = append(rows, savepoint.Row{Op: 8, Key: savepoint.EncodeKeyedKey([]byte("n"), i64(-42)), Value: []byte("v")})
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	set := parseRules(t, "version: 1\nrules:\n  - purge_keys: {keys_file: keys.txt, op: 7}\n  - purge_keys: {keys: [-42, '+7'], codec: int64, op: 8}\n", map[string]string{
		"keys.txt": "\x6d\xfc\nalice\n\x6e\xfc\nbob\n",
	})
	secret := []byte("a secret of 24 bytes....")
	keySum := sha256.Sum256(secret)
	for _, tc := range []struct {
		name      string
		secret    []byte
		digest    func(string) string
		digestKey string
	}{
		{"sha256", nil, func(s string) string {
			sum := sha256.Sum256([]byte(s))
			return "sha256:" + hex.EncodeToString(sum[:])
		}, ""},
		{"hmac-sha256", secret, func(s string) string {
			mac := hmac.New(sha256.New, secret)
			mac.Write([]byte(s))
			return "hmac-sha256:" + hex.EncodeToString(mac.Sum(nil))
		}, hex.EncodeToString(keySum[:])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			digest := tc.digest
			rep, err := run(t, in, set, transform.Options{Out: filepath.Join(t.TempDir(), "out.snap"), KeyDigests: true, KeyDigestKey: tc.secret})
			if err != nil {
				t.Fatal(err)
			}
			p := ruleStats(t, rep, 1).Purge
			if want := []transform.KeyFound{{Key: digest("\x6d\xfc"), Rows: 1}, {Key: digest("alice"), Rows: 1}}; !reflect.DeepEqual(p.Found, want) {
				t.Errorf("found %+v, want %+v", p.Found, want)
			}
			if want := []string{digest("\x6e\xfc"), digest("bob")}; !slices.Equal(p.NotFound, want) || p.NotFoundHex != nil {
				t.Errorf("not found %q (hex %q), want %q (no hex)", p.NotFound, p.NotFoundHex, want)
			}
			if p.DigestKey != tc.digestKey {
				t.Errorf("the secret named as %q, want %q", p.DigestKey, tc.digestKey)
			}
			p = ruleStats(t, rep, 2).Purge
			if want := []transform.KeyFound{{Key: digest("-42"), Rows: 1}}; !reflect.DeepEqual(p.Found, want) || !slices.Equal(p.NotFound, []string{digest("7")}) {
				t.Errorf("int64 keys: found %+v, not found %q; want %+v and the digest of 7", p.Found, p.NotFound, want)
			}
			j, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"alice", "bob", "6dfc", "6efc", "-42", `"7"`, "+7", "a secret"} {
				if bytes.Contains(j, []byte(k)) {
					t.Errorf("the report names listed key %s: %s", k, j)
				}
			}
		})
	}
	out := filepath.Join(dir, "short.snap")
	_, err := run(t, in, set, transform.Options{Out: out, KeyDigests: true, KeyDigestKey: secret[:transform.MinKeyDigestKey-1]})
	if err == nil || !strings.Contains(err.Error(), "takes at least 16") {
		t.Errorf("a secret of 15 bytes: %v, want it refused", err)
	}
	if _, serr := os.Stat(out); serr == nil {
		t.Error("a run refused for its secret wrote its output")
	}
}

// TestMergeLegacyBlobBehindPrefixed: a merge that moves an operator's
// legacy timer blob into one holding a prefixed blob of that name warns
// that the moved blob is not read after a restore (clink reads the
// prefixed key first); with no prefixed blob there, or no merge, it does not.
func TestMergeLegacyBlobBehindPrefixed(t *testing.T) {
	timers := savepoint.EncodeTimers(nil, []savepoint.Timer{{Time: 5, Key: []byte("k")}})
	legacy := savepoint.Row{Op: 7, Key: []byte("__clink_timers"), Value: timers}
	prefixed := savepoint.Row{Op: 8, Key: []byte("\xff__clink_timers"), Value: timers}
	keyed := savepoint.Row{Op: 8, Key: savepoint.EncodeKeyedKey([]byte("s"), []byte("k")), Value: []byte("v")}
	const want = `op 8: the legacy timer blob "__clink_timers" that the merge moved from op 7 (1 file) is not read after a restore`
	for _, tc := range []struct {
		name  string
		rows  []savepoint.Row
		rules string
		warn  bool
	}{
		{"merged behind a prefixed blob", []savepoint.Row{legacy, keyed, prefixed}, "  - remap_operator: {from: 7, to: 8, merge: true}\n", true},
		{"no prefixed blob there", []savepoint.Row{legacy, keyed}, "  - remap_operator: {from: 7, to: 8, merge: true}\n", false},
		{"no merge", []savepoint.Row{legacy, keyed, prefixed}, "  - drop_slot: {op: 8, slot: nothing}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "in.snap")
			if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), tc.rows, savepoint.SnapshotOptions{Sidecar: true}); err != nil {
				t.Fatal(err)
			}
			rep, err := run(t, in, parseRules(t, "version: 1\nrules:\n"+tc.rules, nil), transform.Options{DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, w := range rep.Warnings {
				found = found || strings.Contains(w, want)
			}
			if found != tc.warn {
				t.Errorf("warned %v, want %v: %q", found, tc.warn, rep.Warnings)
			}
		})
	}
}

// TestMergeTimerBlobsJoined: the timer blobs of two operators that a
// remap_operator with merge: true makes one key are joined into the copy a
// restore keeps: every timer of both, identical ones once, sorted; the
// duplicates are resolved as before and no timer is reported lost. Of a
// blob its file stores twice, the copy a restore keeps is taken in (the
// later, or of two empty blobs, 8 bytes each, the earlier) and the other
// stays lost; so does a blob a restore keeps that cannot be read, with a
// warning naming it, while one it hid does not stop the join. With the
// output sorted in memory or through temporary files, in canonical or
// stream order, or after a purge of one of the timers' keys (whose audit
// counts the timers removed from both blobs), the kept blob is the same.
func TestMergeTimerBlobsJoined(t *testing.T) {
	// The legacy unprefixed key, a raw row get_operator_state falls back
	// to, is joined as the prefixed one is.
	for _, timers := range [][]byte{[]byte("\xff__clink_timers"), []byte("__clink_timers")} {
		t.Run(savepoint.RenderKey(timers), func(t *testing.T) { testMergeTimerBlobsJoined(t, timers) })
	}
}

func testMergeTimerBlobsJoined(t *testing.T, timers []byte) {
	tm := func(ts int64, key string) savepoint.Timer { return savepoint.Timer{Time: ts, Key: []byte(key)} }
	blob := func(proc, event []savepoint.Timer) []byte { return savepoint.EncodeTimers(proc, event) }
	a := savepoint.Row{Op: 7, Key: timers, Value: blob([]savepoint.Timer{tm(50, "p")}, []savepoint.Timer{tm(2, "c"), tm(1, "a")})}
	b := savepoint.Row{Op: 8, Key: timers, Value: blob(nil, []savepoint.Timer{tm(3, "b"), tm(1, "a")})}
	bOld := savepoint.Row{Op: 8, Key: timers, Value: blob(nil, []savepoint.Timer{tm(9, "stale"), tm(8, "stale")})}
	keyed := savepoint.Row{Op: 7, Key: []byte("\x01agg|k"), Value: []byte("v")}
	remap := "  - remap_operator: {from: 7, to: 8, merge: true}\n"
	empty := savepoint.Row{Op: 7, Key: timers, Value: blob(nil, nil)}
	junk := savepoint.Row{Op: 8, Key: timers, Value: []byte("junk")}
	all := blob([]savepoint.Timer{tm(50, "p")}, []savepoint.Timer{tm(1, "a"), tm(2, "c"), tm(3, "b")})
	cases := []struct {
		name     string
		rows     []savepoint.Row // in stream order
		rules    string
		spill    bool
		noSearch bool   // copies hidden in the input are not looked for
		want     []byte // op 8's blob in the output
		merged   int64
		lost     string // the start of the lost-timers warning, if any
		unread   bool   // a warning names an unreadable blob
		dupes    int64
		purgedTm int64 // timers the purge removed (rule 1, a purge)
		joined   int64 // of the dupes, copies of joined blobs
	}{
		{name: "joined", rows: []savepoint.Row{keyed, a, b}, rules: remap, want: all, merged: 4, dupes: 1, joined: 1},
		{name: "joined through temporary files", rows: []savepoint.Row{keyed, a, b}, rules: remap, spill: true, want: all, merged: 4, dupes: 1, joined: 1},
		{name: "the remapped blob later", rows: []savepoint.Row{b, keyed, a}, rules: remap, want: all, merged: 4, dupes: 1, joined: 1},
		{
			name: "a blob stored twice", rows: []savepoint.Row{bOld, a, b}, rules: remap, want: all, merged: 4, dupes: 2, joined: 1,
			lost: "1 timer blob(s) holding 2 timer(s) removed as duplicates",
		},
		{
			name: "a blob stored twice, hidden copies not looked for", rows: []savepoint.Row{bOld, a, b}, rules: remap, noSearch: true,
			want: all, merged: 4, dupes: 2, joined: 1, lost: "1 timer blob(s) holding 2 timer(s) removed as duplicates",
		},
		{
			// A restore keeps the first of two equal 8-byte values.
			name: "an empty blob stored twice", rows: []savepoint.Row{b, empty, empty}, rules: remap,
			want: blob(nil, []savepoint.Timer{tm(1, "a"), tm(3, "b")}), merged: 2, dupes: 2, joined: 1,
		},
		{
			name: "after a purge", rows: []savepoint.Row{keyed, a, b},
			rules: "  - purge_keys: {keys: [a]}\n" + remap,
			want:  blob([]savepoint.Timer{tm(50, "p")}, []savepoint.Timer{tm(2, "c"), tm(3, "b")}), merged: 3, dupes: 1, joined: 1, purgedTm: 2,
		},
		{
			// The drop removes the copy of op 8's blob a restore keeps: the
			// copy it hid does not come back, and op 7's blob meets none.
			name: "the kept copy dropped by a rule", rows: []savepoint.Row{bOld, a, b},
			rules: "  - drop: 'op == 8 && len(value_bytes) == " + strconv.Itoa(len(b.Value)) + "'\n" + remap,
			want:  a.Value, dupes: 1, lost: "1 timer blob(s) holding 2 timer(s) removed as duplicates",
		},
		{name: "unreadable", rows: []savepoint.Row{keyed, {Op: 7, Key: timers, Value: []byte("junk")}, b}, rules: remap, want: b.Value, unread: true, dupes: 1},
		{
			// The unreadable copy is one a restore did not keep.
			name: "an unreadable hidden copy", rows: []savepoint.Row{junk, a, b}, rules: remap, want: all, merged: 4, dupes: 2, joined: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.spill {
				defer transform.SetSpill(1, 0)()
			}
			if tc.noSearch {
				defer transform.SetShadowSearch(1, false)()
			}
			dir := t.TempDir()
			in, out := filepath.Join(dir, "in.snap"), filepath.Join(dir, "out.snap")
			if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), tc.rows, savepoint.SnapshotOptions{Sidecar: true, AsIs: true}); err != nil {
				t.Fatal(err)
			}
			set := parseRules(t, "version: 1\nrules:\n"+tc.rules, nil)
			rep, err := run(t, in, set, transform.Options{Out: out})
			if err != nil {
				t.Fatal(err)
			}
			plan, err := run(t, in, set, transform.Options{DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			if plan.TimersMerged != rep.TimersMerged || plan.DuplicatesResolved != rep.DuplicatesResolved || !slices.Equal(plan.Warnings, rep.Warnings) {
				t.Errorf("plan: timers merged %d, duplicates %d, warnings %q; apply: %d, %d, %q", plan.TimersMerged, plan.DuplicatesResolved, plan.Warnings, rep.TimersMerged, rep.DuplicatesResolved, rep.Warnings)
			}
			var got [][]byte
			for _, r := range readRows(t, out) {
				if savepoint.IsTimerBlob(r.Key) {
					if r.Op != 8 {
						t.Errorf("a timer blob of op %d in the output", r.Op)
					}
					got = append(got, r.Value)
				}
			}
			if len(got) != 1 || !bytes.Equal(got[0], tc.want) {
				t.Errorf("op 8's timer blobs %q, want one: %q", got, tc.want)
			}
			if rep.TimersMerged != tc.merged || rep.DuplicatesResolved != tc.dupes {
				t.Errorf("timers merged %d, duplicates %d; want %d, %d", rep.TimersMerged, rep.DuplicatesResolved, tc.merged, tc.dupes)
			}
			var lost, unread bool
			for _, w := range rep.Warnings {
				if strings.Contains(w, "removed as duplicates") {
					lost = true
					if tc.lost == "" || !strings.HasPrefix(w, tc.lost) {
						t.Errorf("warning %q, want none of lost timers or one starting %q", w, tc.lost)
					}
				}
				unread = unread || strings.Contains(w, "not merged with the other timer blobs of op 8")
			}
			if tc.lost != "" && !lost {
				t.Errorf("warnings %q: want %q", rep.Warnings, tc.lost)
			}
			// The duplicates' warning says what was done: copies of
			// joined blobs were joined, the others resolved as a
			// restore resolves them.
			dupesWarning := ""
			for _, w := range rep.Warnings {
				if strings.Contains(w, "had the same (op, key)") {
					dupesWarning = w
				}
			}
			var wantDupes string
			joinedWhat := fmt.Sprintf("copies of timer blobs that a merge made meet, which were joined rather than resolved as a restore resolves a duplicate (one copy kept whole): the copy kept holds the timers of every blob that met there, identical ones once (%d timers in the joined blobs)", tc.merged)
			switch restore := "as clink's restore does (keyed: the later row; operator state: the greater 8-byte value)"; {
			case tc.joined == 1 && tc.dupes > 1:
				wantDupes = fmt.Sprintf("%d rows had the same (op, key) as another row after the rules ran (or were stored twice): 1 of them was one of the %s; the others were resolved %s", tc.dupes, joinedWhat, restore)
			case tc.joined > 0:
				wantDupes = fmt.Sprintf("%d rows had the same (op, key) as another row after the rules ran: %s", tc.dupes, joinedWhat)
			default:
				wantDupes = fmt.Sprintf("%d rows had the same (op, key) as another row after the rules ran (or were stored twice); each was resolved %s", tc.dupes, restore)
			}
			if dupesWarning != wantDupes {
				t.Errorf("duplicates' warning:\n%s\nwant:\n%s", dupesWarning, wantDupes)
			}
			if unread != tc.unread {
				t.Errorf("warnings %q: an unreadable blob named: %v, want %v", rep.Warnings, unread, tc.unread)
			}
			if tc.purgedTm > 0 {
				if p := ruleStats(t, rep, 1).Purge; p.TimersRemoved != tc.purgedTm || p.Remaining != 0 {
					t.Errorf("purge audit: %d timers removed, %d rows remaining; want %d, 0", p.TimersRemoved, p.Remaining, tc.purgedTm)
				}
			}
		})
	}
}

// TestMergeTimerBlobsAtScale: joining timer blobs costs memory and time
// in proportion to the input. The copies of one key share the joined
// value (a blob of 1 MiB met by 4,000 stored copies of another would
// otherwise take 4 GiB), and thousands of joined keys are rewritten in one
// pass (one at a time, each rebuilt the index of rewritten rows).
func TestMergeTimerBlobsAtScale(t *testing.T) {
	timers := []byte("\xff__clink_timers")
	var big []savepoint.Timer
	for i := range 1 << 16 {
		big = append(big, savepoint.Timer{Time: int64(i), Key: []byte("key")})
	}
	copies := []savepoint.Row{{Op: 7, Key: timers, Value: savepoint.EncodeTimers(nil, big)}}
	for range 4000 {
		copies = append(copies, savepoint.Row{Op: 8, Key: timers, Value: savepoint.EncodeTimers(nil, nil)})
	}
	// Two keys, a big blob each, their copies in turn (stream order).
	keyB := append(bytes.Clone(timers), 'b')
	interleaved := []savepoint.Row{copies[0], {Op: 7, Key: keyB, Value: copies[0].Value}}
	for range 2000 {
		interleaved = append(interleaved, savepoint.Row{Op: 8, Key: timers, Value: savepoint.EncodeTimers(nil, nil)}, savepoint.Row{Op: 8, Key: keyB, Value: savepoint.EncodeTimers(nil, nil)})
	}
	var keys []savepoint.Row
	for _, op := range []uint64{7, 8} {
		for i := range 5000 {
			keys = append(keys, savepoint.Row{Op: op, Key: fmt.Appendf(nil, "%s%05d", timers, i), Value: savepoint.EncodeTimers(nil, []savepoint.Timer{{Time: int64(op), Key: []byte("k")}})})
		}
	}
	for _, tc := range []struct {
		name   string
		rows   []savepoint.Row
		merged int64
	}{
		{"one key stored 4,000 times", copies, 1 << 16},
		{"5,000 keys", keys, 2 * 5000},
		{"two keys stored 2,000 times each, in turn", interleaved, 2 << 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in, out := filepath.Join(dir, "in.snap"), filepath.Join(dir, "out.snap")
			if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), tc.rows, savepoint.SnapshotOptions{Sidecar: true, AsIs: true}); err != nil {
				t.Fatal(err)
			}
			set := parseRules(t, "version: 1\nrules:\n  - remap_operator: {from: 7, to: 8, merge: true}\n", nil)
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			rep, err := run(t, in, set, transform.Options{Out: out})
			if err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&m1)
			if rep.TimersMerged != tc.merged {
				t.Errorf("timers merged %d, want %d", rep.TimersMerged, tc.merged)
			}
			if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 128<<20 {
				t.Errorf("allocated %d MiB", alloc>>20)
			}
		})
	}
}

// TestPurgeRemainingAfterRemap: a purge scoped to an operator does not see
// the rows a later remap_operator moves into it (lint and apply warn), and
// the audit counts every row of a listed key that the output's operator
// then holds, composite keys included: it must never say none remain when
// some do. The rows are stored sorted and in clink's order; a purge after
// the remap leaves none.
func TestPurgeRemainingAfterRemap(t *testing.T) {
	const opA, opB = 1001, 1002
	listed := []string{"user-3", "user-10", "user-11", "user-40"}
	var rows []savepoint.Row
	for i := range 60 {
		uk := []byte("user-" + strconv.Itoa(i))
		rows = append(rows,
			savepoint.Row{Op: opA, Key: savepoint.EncodeKeyedKey([]byte("profile"), uk), Value: i64(int64(i))},
			savepoint.Row{Op: opB, Key: savepoint.EncodeKeyedKey([]byte("seen"), uk), Value: i64(int64(i))})
		for item := range i % 3 {
			ck := append(append(bytes.Clone(uk), 0x1F), "sku-"+strconv.Itoa(item)...)
			rows = append(rows, savepoint.Row{Op: opA, Key: savepoint.EncodeKeyedKey([]byte("cart"), ck), Value: i64(int64(item))})
		}
	}
	// The output's rows of listed keys in opB, counted apart from sptool.
	remaining := func(sp *savepoint.Savepoint) int64 {
		var n int64
		for _, l := range rowsOf(sp) {
			k := savepoint.ParseKey(l.Key)
			if l.Op != opB || k.Kind != savepoint.KindKeyed {
				continue
			}
			for _, s := range listed {
				if string(k.UserKey) == s || string(k.Slot) == "cart" && bytes.HasPrefix(k.UserKey, []byte(s+"\x1f")) {
					n++
				}
			}
		}
		return n
	}
	purge := "  - purge_keys: {keys: [" + strings.Join(listed, ", ") + "], codec: string, op: 1002}\n"
	remap := "  - remap_operator: {from: 1001, to: 1002, merge: true}\n"
	for _, tc := range []struct {
		name, rules string
		asIs        bool
		remain      bool // rows of listed keys remain in opB
	}{
		{"purge then remap", purge + remap, false, true},
		{"purge then remap, clink's order", purge + remap, true, true},
		{"remap then purge", remap + purge, false, false},
		{"remap then purge, clink's order", remap + purge, true, false},
		// Between two remaps, the purge does not see the rows either.
		{"remap, purge, remap", "  - remap_operator: {from: 1001, to: 1003}\n" + purge + "  - remap_operator: {from: 1003, to: 1002, merge: true}\n", false, true},
		{"remap, purge, remap, clink's order", "  - remap_operator: {from: 1001, to: 1003}\n" + purge + "  - remap_operator: {from: 1003, to: 1002, merge: true}\n", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := filepath.Join(t.TempDir(), "in.snap")
			stored := slices.Clone(rows)
			if tc.asIs {
				rand.New(rand.NewPCG(1, 2)).Shuffle(len(stored), func(i, j int) { stored[i], stored[j] = stored[j], stored[i] })
			}
			if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), stored, savepoint.SnapshotOptions{Sidecar: true, AsIs: tc.asIs}); err != nil {
				t.Fatal(err)
			}
			set := parseRules(t, "version: 1\nslots:\n  - {op: 1001, slot: cart, key: string, composite: true}\nrules:\n"+tc.rules, nil)
			out := filepath.Join(t.TempDir(), "out.snap")
			rep, err := run(t, in, set, transform.Options{Out: out})
			if err != nil {
				t.Fatal(err)
			}
			want := remaining(open(t, out))
			if (want > 0) != tc.remain {
				t.Fatalf("test setup: %d rows of listed keys in op %d of the output", want, opB)
			}
			for _, ps := range rep.PerRule {
				if ps.Purge != nil && ps.Purge.Remaining != want {
					t.Errorf("audit: %d rows of listed keys remaining, the output holds %d", ps.Purge.Remaining, want)
				}
			}
		})
	}
}

// TestPurgeWarnsOfCompositeLikeSlot: a purge matches the keys of a slot
// not declared composite whole, so the elements of listed keys in a slot
// of clink's expiring collections (key, 0x1F, element) are left: the run
// warns, naming the slot, unless it is declared, when they go. Keys of
// int64 slots, which hold 0x1F by chance, and a few text keys holding it
// in a slot of plain ones are not taken for composite.
func TestPurgeWarnsOfCompositeLikeSlot(t *testing.T) {
	var rows []savepoint.Row
	for i := range 40 {
		uk := []byte("user-" + strconv.Itoa(i))
		rows = append(rows,
			savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("cart"), append(append(bytes.Clone(uk), 0x1F), "sku-1"...)), Value: i64(1)},
			savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("ids"), i64(int64(0x1F1F1F1F1F1F1F1F+i))), Value: i64(2)},
			savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("seen"), uk), Value: i64(3)})
		if i%10 == 0 { // a few text keys that hold 0x1F: not a composite slot
			rows = append(rows, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("seen"), append(bytes.Clone(uk), "\x1fx"...)), Value: i64(4)})
		}
	}
	in := filepath.Join(t.TempDir(), "in.snap")
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, decl string
		warn       bool
		dropped    int64
	}{
		{"undeclared", "", true, 1},
		{"declared composite", "slots:\n  - {op: 7, slot: cart, key: string, composite: true}\n", false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, keys := range []string{"{keys: [user-3], codec: string}", "{keys: [5], codec: int64}"} {
				// The purge alone, after a remap (as the warning of such
				// a move advises), before a rename, and before a remap:
				// the slot is named as the purge sees it, and the
				// elements it left are counted whatever follows.
				for _, around := range [][2]string{{"", ""}, {"  - remap_operator: {from: 7, to: 8}\n", ""}, {"", "  - rename_slot: {op: 7, from: cart, to: basket}\n"}, {"", "  - remap_operator: {from: 7, to: 9}\n"}} {
					set := parseRules(t, "version: 1\n"+tc.decl+"rules:\n"+around[0]+"  - purge_keys: "+keys+"\n"+around[1], nil)
					rep, err := run(t, in, set, transform.Options{DryRun: true})
					if err != nil {
						t.Fatal(err)
					}
					op := "7"
					if around[0] != "" {
						op = "8"
					}
					warning := `slot "cart" of op ` + op + ` is not declared 'composite: true', but its keys look composite`
					warned := slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, warning) })
					if want := tc.warn && strings.Contains(keys, "string"); warned != want {
						t.Errorf("%s %q: warned %v, want %v: %q", keys, around, warned, want, rep.Warnings)
					}
					// The audit names the slot too, and counts the
					// elements of listed keys left there apart from
					// rows_remaining.
					for _, rs := range rep.PerRule {
						if rs.Purge == nil {
							continue
						}
						var want []string
						var elems int64
						if warned {
							want, elems = []string{`op ` + op + ` slot "cart"`}, 1
						}
						if !slices.Equal(rs.Purge.CompositeLooking, want) {
							t.Errorf("%s %q: audit's composite-looking slots %q, want %q", keys, around, rs.Purge.CompositeLooking, want)
						}
						if rs.Purge.ElementsLeft != elems || rs.Purge.Remaining != 0 {
							t.Errorf("%s %q: audit's elements left %d, rows remaining %d, want %d and 0", keys, around, rs.Purge.ElementsLeft, rs.Purge.Remaining, elems)
						}
					}
					if strings.Contains(keys, "string") && rep.RowsDropped != tc.dropped {
						t.Errorf("%s: %d rows dropped, want %d", keys, rep.RowsDropped, tc.dropped)
					}
				}
			}
		})
	}
}

// TestPurgeElementsLeft: the elements of listed keys a purge leaves in a
// slot not declared composite whose keys look composite are counted,
// none or some, and the slot is warned of either way; a slot of plain
// keys of which a few hold 0x1F is no such slot, and its rows are not
// counted.
func TestPurgeElementsLeft(t *testing.T) {
	var rows []savepoint.Row
	for i := range 40 {
		uk := []byte("user-" + strconv.Itoa(i))
		rows = append(rows,
			savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("cart"), append(append(bytes.Clone(uk), 0x1F), "sku-1"...)), Value: i64(1)},
			savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("seen"), uk), Value: i64(3)})
		if i%10 == 0 {
			rows = append(rows, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("seen"), append(bytes.Clone(uk), "\x1fx"...)), Value: i64(4)})
		}
	}
	in := filepath.Join(t.TempDir(), "in.snap")
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		keys  string
		elems int64
	}{
		{"[user-77, user-78]", 0},
		{"[user-7, user-8, user-77]", 2},
		{"[user-10, user-0]", 2}, // their rows of seen that hold 0x1F are no elements
	} {
		set := parseRules(t, "version: 1\nrules:\n  - purge_keys: {keys: "+tc.keys+"}\n", nil)
		rep, err := run(t, in, set, transform.Options{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		p := rep.PerRule[0].Purge
		if p.ElementsLeft != tc.elems || p.Remaining != 0 || !slices.Equal(p.CompositeLooking, []string{`op 7 slot "cart"`}) {
			t.Errorf("%s: elements %d, remaining %d, composite-looking %q", tc.keys, p.ElementsLeft, p.Remaining, p.CompositeLooking)
		}
		// The warning says what was left, none included: with none, it
		// does not say that elements were left.
		left := "it found none of the listed keys'"
		if tc.elems > 0 {
			left = fmt.Sprintf("and it left at least %d elements of listed keys there (counted in the key groups whose first key looks composite)", tc.elems)
		}
		warned := slices.ContainsFunc(rep.Warnings, func(w string) bool {
			return strings.Contains(w, `slot "cart" of op 7 is not declared 'composite: true'`) && strings.Contains(w, left)
		})
		if !warned {
			t.Errorf("%s: no warning saying %q: %q", tc.keys, left, rep.Warnings)
		}
		var b strings.Builder
		if err := rep.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		text := fmt.Sprintf(`not counted as remaining: elements (key 0x1F element) of listed keys in op 7 slot "cart", not declared composite, whose keys look composite: %d left by the purge in the key groups whose first key looks composite (see the warning)`, tc.elems)
		if !strings.Contains(b.String(), text) {
			t.Errorf("%s: the report lacks %q:\n%s", tc.keys, text, b.String())
		}
	}
}

// TestCompositeLookingSlotShownAsInspect: the warning and the audit name a
// composite-looking slot whose name is not printable as inspect and the
// report's table show it (0x and its hex), not in Go's escapes.
func TestCompositeLookingSlotShownAsInspect(t *testing.T) {
	var rows []savepoint.Row
	for i := range 10 {
		uk := []byte("user-" + strconv.Itoa(i))
		rows = append(rows, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("c\x01rt"), append(append(bytes.Clone(uk), 0x1F), "sku-1"...)), Value: i64(1)})
	}
	rep := planRows(t, rows, "  - purge_keys: {keys: [user-3]}\n")
	if p := rep.PerRule[0].Purge; !slices.Equal(p.CompositeLooking, []string{"op 7 slot 0x63017274"}) {
		t.Errorf("audit's composite-looking slots %q, want [op 7 slot 0x63017274]", p.CompositeLooking)
	}
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool {
		return strings.Contains(w, "slot 0x63017274 of op 7 is not declared 'composite: true'")
	}) {
		t.Errorf("no warning naming slot 0x63017274: %q", rep.Warnings)
	}
}

// Composite keys of 8 bytes ("ab\x1fcart1") look composite, the elements
// a purge leaves of them are counted, even where a key group's first key
// in the slot is another subject's; an int64 key of 8 bytes that holds a
// 0x1F does not.
func TestPurgeElementsLeftShortKeys(t *testing.T) {
	var rows []savepoint.Row
	for i := range 40 {
		uk := []byte(fmt.Sprintf("u%04d", i)) // "u0003\x1fi1": 8 bytes
		for _, e := range []string{"i1", "i2", "i3", "i4"} {
			rows = append(rows, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("cart"), append(append(bytes.Clone(uk), 0x1F), e...)), Value: i64(1)})
		}
		rows = append(rows, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("seen"), uk), Value: i64(3)})
	}
	rep := planRows(t, rows, "  - purge_keys: {keys: [u0003, u0017, u0029]}\n")
	p := rep.PerRule[0].Purge
	if p.ElementsLeft != 12 || p.Remaining != 0 || !slices.Equal(p.CompositeLooking, []string{`op 7 slot "cart"`}) {
		t.Errorf("elements %d, remaining %d, composite-looking %q; want 12, 0 and cart", p.ElementsLeft, p.Remaining, p.CompositeLooking)
	}
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool {
		return strings.Contains(w, "and it left at least 12 elements of listed keys there")
	}) {
		t.Errorf("no warning of 12 elements left: %q", rep.Warnings)
	}
	for _, c := range []struct {
		key  string
		want bool
	}{
		{"ab\x1fcart1", true},
		{"abc\x1fxyz", true},
		{"A\x1f\x00\x00\x00\x00\x00\x00", false}, // the int64 8001
		{"A\x1f\x1f\x1f\x1f\x1f\x1f\x1f", false},
		{"\x1fabcdefg", false},
		{"abcdefg\x1f", false},
		{"user-7\x1f\x00\x00\x00\x01", true}, // not 8 bytes: a binary element is one
	} {
		if got := transform.CompositeLikeForTest([]byte(c.key), "string"); got != c.want {
			t.Errorf("compositeLike(%q) = %v, want %v", c.key, got, c.want)
		}
	}
}

// Rows of listed keys that a later move puts beside the rows a scoped
// purge removed (it ran before, and did not see them) are counted as
// remaining: a rename then a remap into the operator the purged rows are
// in, for a purge of an operator's slot and one of a slot alone.
func TestPurgeAuditFollowsMoves(t *testing.T) {
	rows := []savepoint.Row{
		{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("a"), []byte("alice")), Value: i64(1)},
		{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("a"), []byte("k")), Value: i64(2)},
		{Op: 8, Key: savepoint.EncodeKeyedKey([]byte("b"), []byte("alice")), Value: i64(3)},
		{Op: 8, Key: savepoint.EncodeKeyedKey([]byte("b"), []byte("k2")), Value: i64(4)},
	}
	in := filepath.Join(t.TempDir(), "in.snap")
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	for _, scope := range []string{"op: 7, slot: a", "slot: a"} {
		set := parseRules(t, "version: 1\nrules:\n  - purge_keys: {keys: [alice], "+scope+"}\n  - rename_slot: {op: 7, from: a, to: b}\n  - remap_operator: {from: 8, to: 7, merge: true}\n", nil)
		warned := false
		for _, w := range set.Warnings {
			warned = warned || strings.Contains(w.String(), "rule 3: this rule moves rows next to those of rule 1")
		}
		if !warned {
			t.Errorf("%s: no warning of the remap: %v", scope, set.Warnings)
		}
		rep, err := run(t, in, set, transform.Options{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		p := rep.PerRule[0].Purge
		if p.Remaining != 1 || rep.RowsDropped != 1 {
			t.Errorf("%s: %d rows of listed keys remaining, %d dropped; want 1 (op 8's alice, now beside the purged rows) and 1", scope, p.Remaining, rep.RowsDropped)
		}
	}
}

// TestPurgeAuditAtMovedScope: the audit counts the rows of listed keys in
// the place later rules move a scoped purge's rows to, those that were
// there already included (rows no rule touches), and the timers of listed
// keys in that operator's blob; the count must not depend on an unrelated
// rule that makes every row be looked at.
func TestPurgeAuditAtMovedScope(t *testing.T) {
	tm := func(key string) savepoint.Timer { return savepoint.Timer{Time: 1, Key: []byte(key)} }
	timers := []byte("\xff__clink_timers")
	rows := []savepoint.Row{
		{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("a"), []byte("alice")), Value: i64(1)},
		{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("a"), []byte("k")), Value: i64(2)},
		{Op: 7, Key: timers, Value: savepoint.EncodeTimers(nil, []savepoint.Timer{tm("alice"), tm("k")})},
		// Op 8's slot b is where op 7's slot a goes: its alice stays there.
		{Op: 8, Key: savepoint.EncodeKeyedKey([]byte("b"), []byte("alice")), Value: i64(3)},
		{Op: 8, Key: savepoint.EncodeKeyedKey([]byte("b"), []byte("k2")), Value: i64(4)},
		{Op: 8, Key: timers, Value: savepoint.EncodeTimers(nil, []savepoint.Timer{tm("alice"), tm("k2")})},
	}
	in := filepath.Join(t.TempDir(), "in.snap")
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	noop := "  - drop: 'key == \"no-such-key\"'\n"
	for _, tc := range []struct {
		name, scope        string
		remain, timersKept int64
	}{
		// Op 8's alice row and, the purge being of the whole operator, the
		// alice timer of op 8's blob, joined with op 7's.
		{"operator", "op: 7", 2, 0},
		// Scoped to a slot, the purge leaves timers: they are counted apart.
		{"slot", "op: 7, slot: a", 1, 1},
		// A slot of every operator: op 7's, renamed, then remapped, joins
		// op 8's slot b, beside op 8's own rows of slot a, if any.
		{"slot of every operator", "slot: a", 1, 1},
	} {
		for _, extra := range []string{"", noop} {
			name := tc.name
			if extra != "" {
				name += ", with a filter that drops nothing"
			}
			t.Run(name, func(t *testing.T) {
				rename := "  - rename_slot: {op: 7, from: a, to: b}\n"
				set := parseRules(t, "version: 1\nrules:\n  - purge_keys: {keys: [alice], "+tc.scope+"}\n"+rename+"  - remap_operator: {from: 7, to: 8, merge: true}\n"+extra, nil)
				rep, err := run(t, in, set, transform.Options{DryRun: true})
				if err != nil {
					t.Fatal(err)
				}
				p := rep.PerRule[0].Purge
				if p.Remaining != tc.remain || p.TimersKept != tc.timersKept {
					t.Errorf("remaining %d, timers kept %d; want %d and %d", p.Remaining, p.TimersKept, tc.remain, tc.timersKept)
				}
				var b bytes.Buffer
				if err := rep.WriteText(&b); err != nil {
					t.Fatal(err)
				}
				if want := fmt.Sprintf(" and where the rules after it moved its rows: %d\n", tc.remain); !strings.Contains(b.String(), want) {
					t.Errorf("the text does not say where the audit looked (%q):\n%s", want, b.String())
				}
			})
		}
	}
}

// TestPurgeAuditAfterMovedAway: where a purge of a slot of every operator
// moved its rows is followed as they move on: an operator they left holds
// none of them, and the rows a later remap brings there are not counted
// as remaining (they were never in the purge's scope).
func TestPurgeAuditAfterMovedAway(t *testing.T) {
	rows := []savepoint.Row{
		{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("a"), []byte("alice")), Value: i64(1)},
		{Op: 8, Key: savepoint.EncodeKeyedKey([]byte("b"), []byte("alice")), Value: i64(2)},
	}
	rep := planRows(t, rows, "  - purge_keys: {keys: [alice], slot: a}\n  - rename_slot: {op: 7, from: a, to: t}\n  - remap_operator: {from: 7, to: 999}\n  - remap_operator: {from: 999, to: 998}\n  - rename_slot: {op: 8, from: b, to: t}\n  - remap_operator: {from: 8, to: 999}\n")
	// Op 8's alice is in 999's slot t; the purged rows went to 998's.
	if p := rep.PerRule[0].Purge; p.Remaining != 0 || rep.RowsDropped != 1 {
		t.Errorf("%d rows of listed keys remaining, %d dropped; want 0 and 1", p.Remaining, rep.RowsDropped)
	}
}

// TestPurgeUnsignedKeys: purge_keys with codec uint64 and uint32 erases
// the rows of slots storing such keys (4 bytes for uint32; a uint64 of
// 2^63 or more listed as it is), composite elements of a declared uint32
// slot too, and lists the keys in the audit as the decimals listed, by
// their digests under KeyDigests; a uint32 purge leaves an 8-byte key of
// the same number alone.
func TestPurgeUnsignedKeys(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.snap")
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	u64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	keyed := func(op uint64, slot string, uk []byte) savepoint.Row {
		return savepoint.Row{Op: op, Key: savepoint.EncodeKeyedKey([]byte(slot), uk), Value: []byte("v")}
	}
	rows := []savepoint.Row{
		keyed(7, "u32", u32(3)), keyed(7, "u32", u32(4)), keyed(7, "u32", u32(4294967295)),
		keyed(7, "set", append(u32(3), "\x1fa"...)), keyed(7, "set", append(u32(3), "\x1fb"...)), keyed(7, "set", append(u32(5), "\x1fa"...)),
		keyed(8, "u64", u64(18446744073709551615)), keyed(8, "u64", u64(3)), keyed(8, "u64", u64(4)),
	}
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	set := parseRules(t, `version: 1
slots:
  - {op: 7, slot: u32, key: uint32}
  - {op: 7, slot: set, key: uint32, composite: true}
  - {op: 8, slot: u64, key: uint64}
rules:
  - purge_keys: {keys_file: keys32.txt, codec: uint32, op: 7}
  - purge_keys: {keys: [18446744073709551615, 9], codec: uint64}
  - purge_keys: {keys: [3], codec: uint32, op: 8}
`, map[string]string{"keys32.txt": "3\n4294967295\n6\n"})
	if len(set.Warnings) != 1 || !strings.Contains(set.Warnings[0].Msg, "key codec uint64, but purge_keys encodes keys with uint32") {
		t.Errorf("rule warnings %v, want one: the uint32 purge of op 8's uint64 slot", set.Warnings)
	}
	out := filepath.Join(dir, "out.snap")
	rep, err := run(t, in, set, transform.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, r := range readRows(t, out) {
		left = append(left, fmt.Sprintf("%d %x", r.Row.Op, r.Row.Key))
	}
	want := []string{
		fmt.Sprintf("7 %x", savepoint.EncodeKeyedKey([]byte("set"), append(u32(5), "\x1fa"...))),
		fmt.Sprintf("7 %x", savepoint.EncodeKeyedKey([]byte("u32"), u32(4))),
		fmt.Sprintf("8 %x", savepoint.EncodeKeyedKey([]byte("u64"), u64(3))),
		fmt.Sprintf("8 %x", savepoint.EncodeKeyedKey([]byte("u64"), u64(4))),
	}
	slices.Sort(left)
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("rows left:\n%s\nwant:\n%s", strings.Join(left, "\n"), strings.Join(want, "\n"))
	}
	p := ruleStats(t, rep, 1).Purge
	if wantFound := []transform.KeyFound{{Key: "3", Rows: 3}, {Key: "4294967295", Rows: 1}}; !reflect.DeepEqual(p.Found, wantFound) || !slices.Equal(p.NotFound, []string{"6"}) {
		t.Errorf("uint32 audit: found %+v, not found %q", p.Found, p.NotFound)
	}
	p = ruleStats(t, rep, 2).Purge
	if wantFound := []transform.KeyFound{{Key: "18446744073709551615", Rows: 1}}; !reflect.DeepEqual(p.Found, wantFound) || !slices.Equal(p.NotFound, []string{"9"}) {
		t.Errorf("uint64 audit: found %+v, not found %q", p.Found, p.NotFound)
	}
	if p := ruleStats(t, rep, 3); p.Dropped != 0 || p.Purge.KeysFound != 0 {
		t.Errorf("the uint32 purge of op 8 dropped %d rows, found %d keys; want none", p.Dropped, p.Purge.KeysFound)
	}
	rep, err = run(t, in, set, transform.Options{DryRun: true, KeyDigests: true})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("18446744073709551615"))
	if f := ruleStats(t, rep, 2).Purge.Found; len(f) != 1 || f[0].Key != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("uint64 key's digest %+v, want the SHA-256 of its decimal text", f)
	}
}

// TestPurgeUint32NotCompositeOverInt64: 8-byte integer keys whose fifth
// byte is 0x1F do not look like a uint32 key, 0x1F and an element to a
// uint32 purge: the slot is not named composite-looking, no element is
// said to be left, and its rows are kept.
func TestPurgeUint32NotCompositeOverInt64(t *testing.T) {
	var rows []savepoint.Row
	for _, k := range []uint64{0x1F00000003, 0x1F00000004, 0x1F00000005} {
		rows = append(rows, savepoint.Row{Op: 8, Key: savepoint.EncodeKeyedKey([]byte("ids"), binary.LittleEndian.AppendUint64(nil, k)), Value: []byte("v")})
	}
	// A uint32 key 3, 0x1F and a text element does look composite.
	rows = append(rows, savepoint.Row{Op: 9, Key: savepoint.EncodeKeyedKey([]byte("set"), []byte("\x03\x00\x00\x00\x1fsku-1")), Value: []byte("v")})
	p := ruleStats(t, planRows(t, rows, "  - purge_keys: {keys: [3], codec: uint32}\n"), 1)
	if !slices.Equal(p.Purge.CompositeLooking, []string{`op 9 slot "set"`}) || p.Purge.ElementsLeft != 1 || p.Dropped != 0 {
		t.Errorf("composite-looking %q, elements left %d, dropped %d; want only op 9's slot, 1 and 0", p.Purge.CompositeLooking, p.Purge.ElementsLeft, p.Dropped)
	}
}

// planRows writes rows to a snapshot file, with its sidecar, and returns
// the report of a dry run of the rules given (the lines under 'rules:').
func planRows(t *testing.T, rows []savepoint.Row, rulesYAML string) *transform.Report {
	t.Helper()
	in := filepath.Join(t.TempDir(), "in.snap")
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	rep, err := run(t, in, parseRules(t, "version: 1\nrules:\n"+rulesYAML, nil), transform.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
