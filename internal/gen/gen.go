// Package gen generates synthetic clink savepoints for the bundled example,
// tests and benchmarks. Output is deterministic for a given seed.
package gen

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"github.com/sptool/sptool/savepoint"
)

// Operator ids of the example job, derived from their uids as clink does.
var (
	OpSource   = savepoint.OperatorIDFromUID("src")
	OpAgg      = savepoint.OperatorIDFromUID("agg")
	OpEnricher = savepoint.OperatorIDFromUID("enricher")
)

// Now is the example's reference time: 2026-11-29T00:00:00Z in epoch ms.
const Now int64 = 1795910400000

// UserKey returns the string key of example user i ("user-<i>").
func UserKey(i int) []byte { return []byte("user-" + strconv.Itoa(i)) }

// Int64Key encodes v with clink's int64 codec (8 bytes little-endian).
func Int64Key(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

// ExampleOptions shape the example tree.
type ExampleOptions struct {
	// Parallelism is the number of subtasks, each with one file.
	Parallelism int
	// Users is the number of users whose state the job holds.
	Users int
	// Checkpoint and Job are the tree's checkpoint id and the job id of
	// its COMPLETED marker.
	Checkpoint uint64
	Job        string
	// Seed seeds the random counts and stamps.
	Seed uint64
}

// DefaultExample is the bundled example: 4 subtasks, 300 users.
var DefaultExample = ExampleOptions{Parallelism: 4, Users: 300, Checkpoint: 7, Job: "1001", Seed: 1}

// ExampleRows returns the logical state of the example job, per subtask:
//
//   - agg (uid "agg"): slot "counts" (int64 user id -> int64 running count),
//     slot "seen" (string user key -> TTL-stamped string, ttl: true);
//   - enricher (uid "enricher"): slot "profile" (string user key -> JSON),
//     slot "cart" (expiring map: composite key user 0x1F item -> TTL-stamped int64);
//   - src (uid "src"): Kafka offsets per partition (operator state);
//   - a timer blob of agg per subtask holding that subtask's timers;
//   - a version map for agg and enricher.
func ExampleRows(o ExampleOptions) (map[int][]savepoint.Row, savepoint.VersionMap) {
	r := rand.New(rand.NewPCG(o.Seed, 7))
	out := map[int][]savepoint.Row{}
	owner := func(userKey []byte) int {
		return savepoint.SubtaskForKeyGroup(savepoint.KeyGroupOf(userKey), o.Parallelism)
	}
	add := func(op uint64, slot string, userKey, value []byte) {
		key := savepoint.EncodeKeyedKey([]byte(slot), userKey)
		sub := savepoint.SubtaskForKeyGroup(int(key[0]), o.Parallelism)
		out[sub] = append(out[sub], savepoint.Row{Op: op, Key: key, Value: value})
	}
	timers := map[int][][]byte{}
	for i := 1; i <= o.Users; i++ {
		uk := UserKey(i)
		add(OpAgg, "counts", Int64Key(int64(i)), Int64Key(int64(r.IntN(5000))))
		if i%3 != 0 {
			// expire stamps spread around Now: about a third have expired.
			exp := Now + int64(r.IntN(3*86400000)) - 86400000
			add(OpAgg, "seen", uk, savepoint.JoinTTL(exp, []byte("web")))
		}
		add(OpEnricher, "profile", uk, []byte(fmt.Sprintf(`{"tier":%q,"country":%q}`, []string{"free", "pro", "team"}[i%3], []string{"DE", "FR", "US", "JP"}[i%4])))
		for item := 0; item < i%3; item++ {
			ck := append(append(append([]byte{}, uk...), 0x1F), []byte("sku-"+strconv.Itoa(100+item))...)
			add(OpEnricher, "cart", ck, savepoint.JoinTTL(Now+int64(item-1)*3600000, Int64Key(int64(1+item))))
		}
		if i%10 == 0 {
			sub := owner(uk)
			timers[sub] = append(timers[sub], uk)
		}
	}
	for sub := 0; sub < o.Parallelism; sub++ {
		for p := 0; p < 2; p++ {
			out[sub] = append(out[sub], savepoint.Row{Op: OpSource, Key: append([]byte{0xFF}, []byte("__kafka_off__:"+strconv.Itoa(p))...), Value: Int64Key(int64(1000*(p+1) + sub))})
		}
		out[sub] = append(out[sub], savepoint.Row{Op: OpAgg, Key: append([]byte{0xFF}, []byte("__clink_timers")...), Value: TimerBlob(timers[sub], Now)})
	}
	var vm savepoint.VersionMap
	for _, e := range []savepoint.VersionEntry{
		{Op: OpAgg, StateType: "UserCounter", Version: 1, Slot: "counts"},
		{Op: OpAgg, StateType: "SeenTtl", Version: 1, Slot: "seen"},
		{Op: OpEnricher, StateType: "Profile", Version: 2, Slot: "profile"},
		{Op: OpEnricher, StateType: "Cart", Version: 1, Slot: "cart"},
	} {
		if err := vm.Set(e); err != nil {
			panic(err)
		}
	}
	return out, vm
}

// TimerBlob encodes event-time timers for keys (section 3.4 layout): no
// processing-time timers, one event-time timer per key at ts.
func TimerBlob(keys [][]byte, ts int64) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(keys)))
	for _, k := range keys {
		b = binary.LittleEndian.AppendUint64(b, uint64(ts))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(k)))
		b = append(b, k...)
	}
	return b
}

// WriteExample writes the example tree to dir (which must not exist).
func WriteExample(dir string, o ExampleOptions) error {
	rows, vm := ExampleRows(o)
	tw, err := savepoint.CreateTree(dir, savepoint.TreeOptions{Generation: 1, Checkpoint: o.Checkpoint})
	if err != nil {
		return err
	}
	defer tw.Abort()
	md := savepoint.CanonicalMetadata(nil, vm)
	for sub := 0; sub < o.Parallelism; sub++ {
		if _, err := tw.WriteSubtask(sub, md, rows[sub], savepoint.CompressNone); err != nil {
			return err
		}
	}
	return tw.Commit(o.Job, nil)
}

// BigOptions shape a large synthetic snapshot for benchmarks.
type BigOptions struct {
	// Rows is the number of rows generated (before Keep).
	Rows int
	// Seed seeds the random values and the shuffle.
	Seed uint64
	// Sorted writes rows in canonical order (as sptool writes); false
	// shuffles them as clink's hash-map iteration does.
	Sorted bool
	// KeyPad appends this many bytes to each 8-byte user key (large
	// columns without more rows).
	KeyPad int
	// ShuffledTree writes the files of WriteBigTree in clink's hash-map
	// order too (its files are otherwise canonical, whatever Sorted says).
	ShuffledTree bool
	// Broadcast, when not zero, adds to each file of WriteBigTree the row
	// of a broadcast state of that many bytes: operator state (key 0xFF
	// "rules|" of operator 42), the same value in every file, as clink
	// replicates it into every subtask.
	Broadcast int
	// Keep, when set, keeps only the rows of the key groups it accepts
	// (the others are generated and dropped, so the kept rows are the same
	// as in the whole set).
	Keep func(kg int) bool
}

// BigRows returns o.Rows synthetic rows (of them, those of the key groups
// o.Keep accepts, when it is set): 5 operators, int64 user keys spread over
// all key groups, slots agg/count/window/timers, 8-byte values; in
// canonical order when o.Sorted is set, else shuffled.
func BigRows(o BigOptions) []savepoint.Row {
	r := rand.New(rand.NewPCG(o.Seed, 11))
	slots := [][]byte{[]byte("agg"), []byte("count"), []byte("window"), []byte("timers")}
	ops := []uint64{OpSource, OpAgg, OpEnricher, 42, 7}
	rows := make([]savepoint.Row, 0, o.Rows)
	if o.Keep != nil {
		rows = nil
	}
	// The bytes go in arenas of up to 64 MiB (a row never spans two).
	const arenaSize = 64 << 20
	var arena []byte
	pad := make([]byte, o.KeyPad)
	for i := range pad {
		pad[i] = 'a' + byte(i%26)
	}
	for i := 0; i < o.Rows; i++ {
		uk := append(Int64Key(int64(i)), pad...)
		kg := savepoint.KeyGroupOf(uk)
		value := r.Uint64()
		if o.Keep != nil && !o.Keep(kg) {
			continue
		}
		if need := 32 + len(uk); cap(arena)-len(arena) < need {
			arena = make([]byte, 0, max(arenaSize, need))
		}
		start := len(arena)
		slot := slots[i%len(slots)]
		arena = append(arena, byte(kg))
		arena = append(arena, slot...)
		arena = append(arena, '|')
		arena = append(arena, uk...)
		kEnd := len(arena)
		arena = binary.LittleEndian.AppendUint64(arena, value)
		rows = append(rows, savepoint.Row{Op: ops[i%len(ops)], Key: arena[start:kEnd:kEnd], Value: arena[kEnd:len(arena):len(arena)]})
	}
	if !o.Sorted {
		r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	}
	return rows
}

// WriteBig writes a synthetic snapshot of o.Rows rows to path.
func WriteBig(path string, o BigOptions) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	// Sorted: canonical order, as sptool writes (and RocksDB exports);
	// otherwise the rows stay shuffled, as clink's hash-map order leaves them.
	_, err := savepoint.WriteSnapshotFile(path, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), BigRows(o), savepoint.SnapshotOptions{AsIs: !o.Sorted})
	return err
}

// WriteBigTree writes o.Rows synthetic rows as a checkpoint tree of p
// subtasks (generation 1, checkpoint 1, job 1), each row in the subtask that
// owns its key group, each file in canonical order (in clink's hash-map
// order with o.ShuffledTree).
func WriteBigTree(dir string, o BigOptions, p int) error {
	tw, err := savepoint.CreateTree(dir, savepoint.TreeOptions{Generation: 1, Checkpoint: 1})
	if err != nil {
		return err
	}
	defer tw.Abort()
	md := savepoint.CanonicalMetadata(nil, savepoint.VersionMap{})
	var bcast []savepoint.Row
	if o.Broadcast > 0 {
		v := make([]byte, o.Broadcast)
		r := rand.New(rand.NewPCG(o.Seed, 13))
		for i := 0; i+8 <= len(v); i += 8 {
			binary.LittleEndian.PutUint64(v[i:], r.Uint64())
		}
		bcast = []savepoint.Row{{Op: 42, Key: []byte("\xffrules|"), Value: v}}
	}
	// One subtask at a time: only its rows are in memory.
	for s := 0; s < p; s++ {
		o.Keep = func(kg int) bool { return savepoint.SubtaskForKeyGroup(kg, p) == s }
		var err error
		if o.ShuffledTree {
			o.Sorted = false
			_, err = tw.WriteSubtaskWith(s, md, savepoint.RowSlice(append(BigRows(o), bcast...)), savepoint.SnapshotOptions{AsIs: true})
		} else {
			_, err = tw.WriteSubtask(s, md, append(BigRows(o), bcast...), savepoint.CompressNone)
		}
		if err != nil {
			return err
		}
	}
	return tw.Commit("1", nil)
}
