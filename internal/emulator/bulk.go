package emulator

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Placement is one replica for PlaceResources: resource definition Resource (created
// with one 1 GiB volume if missing) on Node in Pool, or diskless when Pool is empty,
// with the default layer stack DRBD,STORAGE. ResourceGroup, when set, puts the
// definition in that group (SetResourceGroup made it), as the CSI driver creates a
// volume in its StorageClass's group; the group's place count is what the replicas
// are measured against.
type Placement struct {
	Resource, Node, Pool string
	InUse                bool
	ResourceGroup        string
}

// PlaceResources places many replicas as PlaceResource places each, and commits them
// to the k8s database once, before it returns. One by one, every placement is its own
// transaction, which renders every row three times and commits within 30 s: the cost grows
// with the square of the count, and a batch of thousands does not commit in 30 s (each
// row is its own object and request, as in LINSTOR's k8s backend), so the commit here
// gets time in proportion to the batch.
//
// It stops at the first placement that fails and returns its error; the placements
// before it stay and are committed. A failed commit is returned and the placements stay
// in memory (not rolled back as a request's change is): their rows are marked unknown
// and the next periodic save writes them.
func (e *Emulator) PlaceResources(ps []Placement) error {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	var placeErr error
	for i, p := range ps {
		err := e.placeResource(p.Resource, p.Node, p.Pool, p.InUse, nil)
		if err == nil && p.ResourceGroup != "" {
			err = e.putInGroup(p.Resource, p.ResourceGroup)
		}
		if err != nil {
			placeErr = fmt.Errorf("placement %d (%s on %s): %w", i, p.Resource, p.Node, err)
			break
		}
	}
	db, alive := e.committer()
	if db == nil {
		return placeErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout(len(ps)))
	defer cancel()
	if err := e.commit(ctx, db, alive); err != nil {
		return fmt.Errorf("committing %d placements: %w", len(ps), err)
	}
	return placeErr
}

// putInGroup puts resource definition rd in the existing resource group rg.
func (e *Emulator) putInGroup(rd, rg string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	g, ok := e.rgs[strings.ToLower(rg)]
	if !ok && !strings.EqualFold(rg, defaultResourceGroup().Name) {
		return fmt.Errorf("resource group %q not found", rg)
	}
	if !ok {
		g = defaultResourceGroup()
	}
	e.rds[strings.ToLower(rd)].ResourceGroupName = g.Name
	return nil
}

// commitTimeout bounds the commit of a batch of n placements: a request's 30 s, plus
// 50 ms a replica (about ten rows, each a request or two).
func commitTimeout(n int) time.Duration {
	return 30*time.Second + time.Duration(n)*50*time.Millisecond
}
