package props

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// validate returns why ruleTable[i] refuses value, or "".
func validate(i int, value string) string {
	r := &ruleTable[i]
	switch r.Type {
	case TypeString:
		return ""
	case TypeRegex, TypeSymbol:
		re, err := ruleRegexp(i)
		if err != nil {
			return "cannot be checked: " + err.Error()
		}
		if re.MatchString(value) {
			return ""
		}
		if r.Type == TypeSymbol {
			return "must be one of " + strings.Join(r.Values, ", ")
		}
		return "must match " + r.Pattern
	case TypeBoolean:
		if equalFoldASCII(value, "yes") || equalFoldASCII(value, "no") {
			return ""
		}
		return "must be yes or no"
	case TypeBooleanTrueFalse:
		for _, ok := range [...]string{"true", "false", "yes", "no"} {
			if equalFoldASCII(value, ok) {
				return ""
			}
		}
		return "must be true, false, yes or no"
	case TypeLong:
		if _, ok := parseLong(value); ok {
			return ""
		}
		return "must be a 64-bit integer"
	case TypeRange:
		if n, ok := parseLong(value); ok && inRange(n, r) {
			return ""
		}
		return "must be an integer in " + r.Min + ".." + r.Max + unitSuffix(r)
	case TypeRangeFloat:
		min, _ := strconv.ParseFloat(r.Min, 64)
		max, _ := strconv.ParseFloat(r.Max, 64)
		if f, ok := parseDouble(value); ok && min <= f && f <= max {
			return ""
		}
		return "must be a number in " + r.Min + ".." + r.Max + unitSuffix(r)
	case TypeNumericOrSymbol:
		reason := "must be an integer in " + r.Min + ".." + r.Max + unitSuffix(r) +
			" or one of " + strings.Join(r.Values, ", ")
		// A number is never matched against the symbols, even when out of range.
		if n, ok := parseLong(value); ok {
			if inRange(n, r) {
				return ""
			}
			return reason
		}
		re, err := ruleRegexp(i)
		if err != nil {
			return "cannot be checked: " + err.Error()
		}
		if re.MatchString(value) {
			return ""
		}
		return reason
	default:
		return fmt.Sprintf("cannot be checked: unknown rule type %q", r.Type)
	}
}

func inRange(n int64, r *Rule) bool {
	min, err1 := strconv.ParseInt(r.Min, 10, 64)
	max, err2 := strconv.ParseInt(r.Max, 10, 64)
	return err1 == nil && err2 == nil && min <= n && n <= max
}

func unitSuffix(r *Rule) string {
	if r.Unit == "" {
		return ""
	}
	return " (" + r.Unit + ")"
}

// compiled caches the Go regexp of each rule, compiled on first use.
var compiled [len(ruleTable)]struct {
	once sync.Once
	re   *regexp.Regexp
	err  error
}

// ruleRegexp returns the compiled Pattern of ruleTable[i].
func ruleRegexp(i int) (*regexp.Regexp, error) {
	c := &compiled[i]
	c.once.Do(func() { c.re, c.err = compileJava(ruleTable[i].Pattern) })
	return c.re, c.err
}

// compileJava compiles a Java regular expression for whole-value matching (Java's
// Matcher.matches), translated to Go by javaToGo.
func compileJava(pattern string) (*regexp.Regexp, error) {
	g, err := javaToGo(pattern)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	re, err := regexp.Compile(`\A(?:` + g + `)\z`)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	return re, nil
}

const (
	// javaDot is what '.' matches in Java: any character but a line terminator.
	javaDot = `[^\n\r\x{85}\x{2028}\x{2029}]`
	// javaSpace is Java's \s (Go's lacks \x0B), without the brackets.
	javaSpace = `\t\n\x0B\f\r `
)

// javaToGo translates the Java regex syntax the whitelist uses into Go syntax with
// the same meaning: '.' outside a class excludes all of Java's line terminators, \s
// includes \x0B. Constructs whose meaning differs between the two or that Go lacks
// (inline flags, nested classes and intersections, \S inside a class, escapes of
// letters other than \d \D \w \W \s \S \b \B \A \z \t \n \r \f) are errors, so a
// pattern is either matched exactly as LINSTOR matches it or not at all.
func javaToGo(p string) (string, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\':
			if i+1 == len(p) {
				return "", errors.New("trailing backslash")
			}
			r, size := utf8.DecodeRuneInString(p[i+1:])
			i += size
			switch {
			case r == 's' && inClass:
				b.WriteString(javaSpace)
			case r == 's':
				b.WriteString("[" + javaSpace + "]")
			case r == 'S' && !inClass:
				b.WriteString("[^" + javaSpace + "]")
			case strings.ContainsRune("dDwWtnrf", r), !inClass && strings.ContainsRune("bBAz", r):
				b.WriteByte('\\')
				b.WriteRune(r)
			case r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
				return "", fmt.Errorf("unsupported escape \\%c", r)
			case r < utf8.RuneSelf:
				b.WriteByte('\\')
				b.WriteRune(r)
			default:
				b.WriteRune(r) // Java: a backslash before a non-ASCII character quotes it
			}
		case inClass && c == '[':
			return "", errors.New("nested character classes are not supported")
		case inClass && c == '&' && strings.HasPrefix(p[i:], "&&"):
			return "", errors.New("character class intersections are not supported")
		case inClass && c == ']':
			inClass = false
			b.WriteByte(c)
		case c == '[':
			inClass = true
			b.WriteByte(c)
			if strings.HasPrefix(p[i+1:], "^") {
				b.WriteByte('^')
				i++
			}
			if strings.HasPrefix(p[i+1:], "]") {
				return "", errors.New("']' first in a character class is not supported")
			}
		case !inClass && c == '.':
			b.WriteString(javaDot)
		case !inClass && c == '(' && strings.HasPrefix(p[i:], "(?") && !strings.HasPrefix(p[i:], "(?:"):
			return "", errors.New("only (?: groups are supported")
		default:
			b.WriteByte(c)
		}
	}
	if inClass {
		return "", errors.New("unclosed character class")
	}
	return b.String(), nil
}

// equalFoldASCII reports whether s equals the lower-case ASCII word lower, ignoring
// the case of ASCII letters only (as Java's (?i) without UNICODE_CASE).
func equalFoldASCII(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// parseLong parses s as Java's Long.parseLong does: an optional '+' or '-', then
// decimal digits (any Unicode decimal digit of the Basic Multilingual Plane, as
// Character.digit accepts), no spaces, within the signed 64-bit range.
func parseLong(s string) (int64, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	var n uint64
	for _, r := range s {
		d := javaDigit(r)
		if d < 0 || n > (limit-uint64(d))/10 {
			return 0, false
		}
		n = n*10 + uint64(d)
	}
	if neg {
		return int64(-n), true // -(1<<63) wraps to math.MinInt64
	}
	return int64(n), true
}

// javaDigit is Character.digit(ch, 10) for a BMP character: the value of a Unicode
// decimal digit (general category Nd; those come in runs of ten), else -1.
func javaDigit(r rune) int {
	if '0' <= r && r <= '9' {
		return int(r - '0')
	}
	if r > 0xFFFF || !unicode.IsDigit(r) {
		return -1
	}
	v := 0
	for x := r - 1; unicode.IsDigit(x); x-- {
		v++
	}
	return v % 10
}

// parseDouble parses s as Java's Double.parseDouble does: surrounding characters up
// to ' ' are trimmed; then an optional sign and NaN, Infinity, a decimal number
// ("1", "1.", ".5", "1e-3") or a hexadecimal one ("0x1.8p1"), optionally followed by
// one of f, F, d, D. NaN is returned as NaN (it is outside every range).
func parseDouble(s string) (float64, bool) {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	body := s
	if body != "" && (body[0] == '+' || body[0] == '-') {
		body = body[1:]
	}
	switch body {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		if s[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	if n := len(s); n > 0 && strings.ContainsRune("fFdD", rune(s[n-1])) {
		s, body = s[:n-1], body[:len(body)-1]
	}
	if !javaFloatSyntax(body) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true // out of range: ±Inf or 0, as in Java
}

// javaFloatSyntax checks an unsigned, suffix-less Java floating-point literal.
func javaFloatSyntax(s string) bool {
	hex := strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X")
	isDigit := func(c byte) bool { return '0' <= c && c <= '9' }
	isMantissaDigit := isDigit
	expChars := "eE"
	if hex {
		s = s[2:]
		isMantissaDigit = func(c byte) bool {
			return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
		}
		expChars = "pP"
	}
	i, digits := 0, 0
	for ; i < len(s) && isMantissaDigit(s[i]); i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && isMantissaDigit(s[i]); i++ {
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i == len(s) {
		return !hex // a hexadecimal literal needs its binary exponent
	}
	if !strings.ContainsRune(expChars, rune(s[i])) {
		return false
	}
	i++
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i == len(s) {
		return false
	}
	for ; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}
