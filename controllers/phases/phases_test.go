package phases

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	ctrl "sigs.k8s.io/controller-runtime"
)

func TestRun(t *testing.T) {
	type scope struct {
		ran  []string
		stop bool
	}
	phase := func(name string, res ctrl.Result, err error, stop bool) Phase[*scope] {
		return func(_ context.Context, s *scope) (ctrl.Result, error) {
			s.ran = append(s.ran, name)
			s.stop = stop
			return res, err
		}
	}
	s := &scope{}
	res, err := Run(context.Background(), s, time.Minute, func() bool { return s.stop },
		phase("a", ctrl.Result{RequeueAfter: 10 * time.Second}, errors.New("a failed"), false),
		phase("b", ctrl.Result{RequeueAfter: 5 * time.Second}, nil, true),
		phase("c", ctrl.Result{}, nil, false),
	)
	if got := len(s.ran); got != 2 || s.ran[1] != "b" {
		t.Errorf("ran %v, want a then b (b stops)", s.ran)
	}
	if res.RequeueAfter != 5*time.Second {
		t.Errorf("requeue %v, want the shortest (5s)", res.RequeueAfter)
	}
	if err == nil || err.Error() != "a failed" {
		t.Errorf("err = %v, want the failure of a, with later phases still run", err)
	}
	if Poll(0, time.Minute) != time.Minute || Poll(time.Second, time.Minute) != time.Second {
		t.Error("Poll")
	}
}

func TestBound(t *testing.T) {
	short := "LINSTOR node n1 is OFFLINE"
	if Bound(short) != short {
		t.Errorf("a short message changed")
	}
	long := strings.Repeat("ü", MaxMessage) // two bytes a rune
	got := Bound(long)
	if len(got) > MaxMessage || !utf8.ValidString(got) || !strings.Contains(got, "more bytes)") {
		t.Errorf("Bound: %d bytes, valid UTF-8 %t, ends %q", len(got), utf8.ValidString(got), got[len(got)-30:])
	}
}
