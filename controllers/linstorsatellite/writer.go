package linstorsatellite

import (
	"context"
	"fmt"
	"slices"
	"strings"

	lapi "github.com/LINBIT/golinstor/client"
	"k8s.io/apimachinery/pkg/types"

	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/observer"
)

// linstorWriter is a satellite pass's one way to write to LINSTOR. It holds the fence
// (while it stands a write is named instead of sent) and tells the observer of every
// write it sends: the node's state is re-read soon, and no decision is taken on a cycle
// older than the write.
type linstorWriter struct {
	conn     *linstor.Connection // nil while LINSTOR cannot be reached
	observer *observer.Observer
	key      types.NamespacedName // the cluster's
	node     string
	// fence says why the operator's LINSTOR writes wait now (lifecycle.LinstorWritesFenced),
	// "" when they may run; fenced lists the writes this pass held back.
	fence  string
	fenced []string
	// wrote: this pass sent a write.
	wrote bool
}

// read is the client for reads: a write sent through it would escape the observer.
func (w *linstorWriter) read() *lapi.Client { return w.conn.Client }

// may says whether the pass may write to LINSTOR. While the fence stands nothing is
// written (a rollback or restore would undo it): the write, named by what, waits, and
// the status says so. Reads go on.
func (w *linstorWriter) may(what string) bool {
	if w.fence == "" {
		return true
	}
	if !slices.Contains(w.fenced, what) {
		w.fenced = append(w.fenced, what)
	}
	return false
}

// fencedMessage says which writes wait and why, "" when none does.
func (w *linstorWriter) fencedMessage() string {
	if len(w.fenced) == 0 {
		return ""
	}
	return fmt.Sprintf("LINSTOR writes wait (%s): %s", strings.Join(w.fenced, "; "), w.fence)
}

// send sends one write (a request, or a request and its retry) and tells the observer,
// whatever the answer: a write whose answer is lost may have happened.
func (w *linstorWriter) send(write func(*lapi.Client) error) error {
	w.wrote = true
	return w.observer.Writer(w.key, w.node, w.conn.Client).Send(write)
}

// evacuate asks LINSTOR to evacuate the node; it returns LINSTOR's warnings.
func (w *linstorWriter) evacuate(ctx context.Context) ([]string, error) {
	warnings, err := linstor.Evacuate(ctx, w.conn, w.node)
	w.sent()
	return warnings, err
}

func (w *linstorWriter) sent() {
	w.wrote = true
	w.observer.Wrote(w.key, w.node)
}

// setNodeProp records one property on the node, unless it holds that value already.
func (w *linstorWriter) setNodeProp(ctx context.Context, lnode lapi.Node, key, value string) error {
	if lnode.Props[key] == value {
		return nil
	}
	mod := lapi.GenericPropsModify{OverrideProps: lapi.OverrideProps{key: value}}
	if err := w.send(func(lc *lapi.Client) error {
		return lc.Nodes.Modify(ctx, lnode.Name, lapi.NodeModify{GenericPropsModify: mod})
	}); err != nil {
		return fmt.Errorf("recording %s: %w", key, err)
	}
	return nil
}
