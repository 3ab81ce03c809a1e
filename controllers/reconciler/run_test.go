package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	ctrl "sigs.k8s.io/controller-runtime"
)

type testScope struct {
	ran  []string
	stop bool
}

func testPhase(name string, res ctrl.Result, err error, stop bool) Phase[*testScope] {
	return func(_ context.Context, s *testScope) (ctrl.Result, error) {
		s.ran = append(s.ran, name)
		s.stop = stop
		return res, err
	}
}

func TestRun(t *testing.T) {
	errA := errors.New("a failed")
	for _, tc := range []struct {
		name    string
		poll    time.Duration
		phases  []Phase[*testScope]
		ran     []string
		requeue time.Duration
		err     error
	}{
		{name: "the shortest requeue wins over the poll", poll: time.Minute, phases: []Phase[*testScope]{
			testPhase("a", ctrl.Result{RequeueAfter: 10 * time.Second}, nil, false),
			testPhase("b", ctrl.Result{RequeueAfter: 5 * time.Second}, nil, false),
			testPhase("c", ctrl.Result{}, nil, false),
		}, ran: []string{"a", "b", "c"}, requeue: 5 * time.Second},
		{name: "the poll when no phase asks sooner", poll: time.Minute, phases: []Phase[*testScope]{
			testPhase("a", ctrl.Result{RequeueAfter: time.Hour}, nil, false),
		}, ran: []string{"a"}, requeue: time.Minute},
		{name: "no poll: only what a phase asks", phases: []Phase[*testScope]{
			testPhase("a", ctrl.Result{}, nil, false),
			testPhase("b", ctrl.Result{RequeueAfter: 2 * time.Second}, nil, false),
		}, ran: []string{"a", "b"}, requeue: 2 * time.Second},
		{name: "no poll and no phase asks: no requeue", phases: []Phase[*testScope]{
			testPhase("a", ctrl.Result{}, nil, false),
		}, ran: []string{"a"}},
		// controller-runtime ignores a result next to an error (and warns): the error
		// comes alone, and later phases still run so that their observations reach the status.
		{name: "an error comes alone, as itself; the phases after it still run", poll: time.Minute, phases: []Phase[*testScope]{
			testPhase("a", ctrl.Result{RequeueAfter: 10 * time.Second}, errA, false),
			testPhase("b", ctrl.Result{RequeueAfter: 5 * time.Second}, nil, true),
			testPhase("c", ctrl.Result{}, nil, false),
		}, ran: []string{"a", "b"}, err: errA},
		{name: "stop ends the list", poll: time.Minute, phases: []Phase[*testScope]{
			testPhase("a", ctrl.Result{RequeueAfter: time.Second}, nil, true),
			testPhase("b", ctrl.Result{}, errA, false),
		}, ran: []string{"a"}, requeue: time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &testScope{}
			res, err := Run(context.Background(), s, tc.poll, func() bool { return s.stop }, tc.phases...)
			if !slices.Equal(s.ran, tc.ran) {
				t.Errorf("ran %v, want %v", s.ran, tc.ran)
			}
			if res.RequeueAfter != tc.requeue {
				t.Errorf("requeue %v, want %v", res.RequeueAfter, tc.requeue)
			}
			if err != tc.err { // the phase's own error, not wrapped: apierrors.Is* still see it
				t.Errorf("err = %v, want %v", err, tc.err)
			}
		})
	}
	if Poll(0, time.Minute) != time.Minute || Poll(time.Second, time.Minute) != time.Second {
		t.Error("Poll")
	}
}

// Pass saves after the phases, told their error; a failed save is added to the pass's
// error and drops the result.
func TestPass(t *testing.T) {
	errPhase, errSave := errors.New("phase failed"), errors.New("status write failed")
	for _, tc := range []struct {
		name     string
		phaseErr error
		saveErr  error
		requeue  time.Duration
		err      string
	}{
		{name: "success: the phases' result", requeue: 3 * time.Second},
		{name: "a failed phase: its error alone, and the save is told", phaseErr: errPhase, err: "phase failed"},
		{name: "a failed save: its error alone", saveErr: errSave, err: "status write failed"},
		{name: "both fail: both errors", phaseErr: errPhase, saveErr: errSave, err: "[phase failed, status write failed]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &testScope{}
			var told error
			save := func(_ context.Context, s *testScope, passErr error) error {
				s.ran = append(s.ran, "save")
				told = passErr
				return tc.saveErr
			}
			res, err := Pass(context.Background(), s, save, time.Minute, func() bool { return s.stop },
				testPhase("a", ctrl.Result{RequeueAfter: 3 * time.Second}, tc.phaseErr, false))
			if !slices.Equal(s.ran, []string{"a", "save"}) {
				t.Errorf("ran %v, want a then save", s.ran)
			}
			if told != tc.phaseErr {
				t.Errorf("save was told %v, want %v", told, tc.phaseErr)
			}
			if res.RequeueAfter != tc.requeue {
				t.Errorf("requeue %v, want %v", res.RequeueAfter, tc.requeue)
			}
			if got := fmt.Sprint(err); (err != nil || tc.err != "") && got != tc.err {
				t.Errorf("err = %v, want %q", err, tc.err)
			}
		})
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
