package corpus

import (
	"math/rand"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// stringAttempts bounds the tries of RandomString; each try allows longer repetitions.
const stringAttempts = 200

// hardLimit stops a runaway expansion, whatever the bounds.
const hardLimit = 1 << 16

// RandomString returns a random string matching the regular expression pattern (Go
// RE2 syntax as used in CRD `pattern`, which is unanchored unless it has ^...$) whose
// length (in runes) is within [minLen, maxLen] (maxLen<0 means no limit). ok=false
// when it could not find one in a bounded number of attempts.
//
// The string is a full match of the pattern itself (anchors and word boundaries
// emit nothing), so it also matches an unanchored pattern. An empty pattern gives
// lowercase alphanumerics, 1..12 runes unless the bounds say otherwise.
func RandomString(r *rand.Rand, pattern string, minLen, maxLen int) (s string, ok bool) {
	minLen = max(minLen, 0)
	if maxLen >= 0 && minLen > maxLen {
		return "", false
	}
	if pattern == "" {
		return randomAlnum(r, minLen, maxLen), true
	}
	check, err := regexp.Compile(pattern)
	if err != nil {
		return "", false
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	re = re.Simplify()
	limit := hardLimit
	if maxLen >= 0 {
		limit = maxLen
	}
	for attempt := 0; attempt < stringAttempts; attempt++ {
		// Start with short repetitions and widen them, faster when minLen is large.
		g := regexGen{r: r, spread: 2 + attempt/4 + minLen*attempt/stringAttempts, limit: limit}
		if !g.emit(re) {
			continue
		}
		out := g.b.String()
		if g.n < minLen || !check.MatchString(out) {
			continue
		}
		return out, true
	}
	return "", false
}

// regexGen expands a simplified regexp/syntax tree into one random match.
type regexGen struct {
	r      *rand.Rand
	spread int // extra repetitions allowed beyond a repetition's minimum
	limit  int // maximum number of runes
	n      int // runes written so far
	b      strings.Builder
}

func (g *regexGen) write(c rune) bool {
	g.n++
	g.b.WriteRune(c)
	return g.n <= g.limit
}

func (g *regexGen) repeat(re *syntax.Regexp, n int) bool {
	for range n {
		if !g.emit(re) {
			return false
		}
	}
	return true
}

// emit appends a random match of re; false when it cannot (no match, too long).
func (g *regexGen) emit(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpNoMatch:
		return false
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && g.r.Intn(2) == 0 {
				c = unicode.SimpleFold(c) // still matches case-insensitively
			}
			if !g.write(c) {
				return false
			}
		}
		return true
	case syntax.OpCharClass:
		c, ok := pickRune(g.r, re.Rune)
		return ok && g.write(c)
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return g.write(rune('!' + g.r.Intn('~'-'!'+1)))
	case syntax.OpCapture:
		return g.emit(re.Sub[0])
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !g.emit(sub) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		return g.emit(re.Sub[g.r.Intn(len(re.Sub))])
	case syntax.OpStar:
		return g.repeat(re.Sub[0], g.r.Intn(g.spread+1))
	case syntax.OpPlus:
		return g.repeat(re.Sub[0], 1+g.r.Intn(g.spread+1))
	case syntax.OpQuest:
		return g.repeat(re.Sub[0], g.r.Intn(2))
	case syntax.OpRepeat: // Simplify rewrites most of these; bound what is left
		hi := re.Max
		if hi < 0 || hi > re.Min+g.spread {
			hi = re.Min + g.spread
		}
		return g.repeat(re.Sub[0], re.Min+g.r.Intn(hi-re.Min+1))
	}
	return false
}

// runeTiers are the ranges pickRune prefers, in order: visible ASCII, then space.
// Classes such as [^\s] or [^'] thus give readable strings.
var runeTiers = [][2]rune{{'!', '~'}, {' ', ' '}, {0, unicode.MaxRune}}

// pickRune picks a random rune of a character class given as [lo, hi] pairs.
func pickRune(r *rand.Rand, ranges []rune) (rune, bool) {
	for _, tier := range runeTiers {
		total := 0
		for i := 0; i+1 < len(ranges); i += 2 {
			lo, hi := max(ranges[i], tier[0]), min(ranges[i+1], tier[1])
			if lo <= hi {
				total += int(hi - lo + 1)
			}
		}
		if total == 0 {
			continue
		}
		k := r.Intn(total)
		for i := 0; i+1 < len(ranges); i += 2 {
			lo, hi := max(ranges[i], tier[0]), min(ranges[i+1], tier[1])
			if lo > hi {
				continue
			}
			if k < int(hi-lo+1) {
				return lo + rune(k), true
			}
			k -= int(hi - lo + 1)
		}
	}
	return 0, false
}

const alnum = "abcdefghijklmnopqrstuvwxyz0123456789"

// randomAlnum returns lowercase alphanumerics, 1..12 runes by default, within
// [minLen, maxLen] (maxLen<0: no limit).
func randomAlnum(r *rand.Rand, minLen, maxLen int) string {
	lo := max(minLen, 1)
	hi := max(lo, 12)
	if maxLen >= 0 {
		hi = min(hi, maxLen)
		lo = min(lo, hi)
	}
	b := make([]byte, lo+r.Intn(hi-lo+1))
	for i := range b {
		b[i] = alnum[r.Intn(len(alnum))]
	}
	return string(b)
}

// violationAlphabet mixes the characters patterns usually allow with some they
// usually refuse (blanks, punctuation), spaces weighted up.
const violationAlphabet = "   \t!\"#$%&'()*+,-./0123456789:;<=>?@AZ[\\]^_`az{|}~"

// violatePattern returns a string that does not match pattern, within
// [minLen, maxLen] when it can; ok=false when every candidate matched.
func violatePattern(r *rand.Rand, pattern string, minLen, maxLen int) (string, bool) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", false
	}
	inBounds := func(s string) bool {
		n := utf8.RuneCountInString(s)
		return n >= minLen && (maxLen < 0 || n <= maxLen)
	}
	lo := max(minLen, 1)
	hi := lo + 8
	if maxLen >= 0 {
		hi = min(hi, maxLen)
	}
	fallback, found := "", false
	if lo <= hi {
		for range 200 {
			b := make([]byte, lo+r.Intn(hi-lo+1))
			for i := range b {
				b[i] = violationAlphabet[r.Intn(len(violationAlphabet))]
			}
			if s := string(b); !re.MatchString(s) {
				return s, true
			}
		}
	}
	// Fixed candidates, possibly out of bounds: the result is invalid anyway.
	for _, s := range []string{"", " ", "a b", "!", "A", "a", "0", "-", "/", ".", "\n"} {
		if re.MatchString(s) {
			continue
		}
		if inBounds(s) {
			return s, true
		}
		if !found {
			fallback, found = s, true
		}
	}
	return fallback, found
}
