//go:build 386 || arm || mips || mipsle

package savepoint

// sptool needs a platform whose int is 64 bits wide, and this file makes
// the build on a 32-bit one fail with the reason in the error. expr-lang's
// integer literals and results are Go ints: on a 32-bit platform a rule
// could not write a TTL stamp (expire_at <= 1795910400000) or an operator
// id, and its comparisons of 64-bit ids would differ from the fast
// matchers'. The readers, too, size what they decode from u32 counts and
// offsets as ints.
var _ = sptoolNeedsA64BitPlatform
