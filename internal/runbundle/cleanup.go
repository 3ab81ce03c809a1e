package runbundle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Cleanup removes what Install made in opts.Namespace: the Subscriptions from the
// run-bundle CatalogSource, the CSVs they installed (OLM keeps a CSV whose Subscription is
// gone), the InstallPlans they own, the CatalogSource, the OperatorGroup if Install
// created it, and the opm server. It never deletes a CRD, a linstor.io object or the
// namespace: LINSTOR keeps running without its operator. Running it again is harmless.
func Cleanup(ctx context.Context, opts Options) (err error) {
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	if opts.Namespace == "" || opts.StateDir == "" {
		return errors.New("cleanup-bundle: Namespace and StateDir are required")
	}
	// The catalog server stops whatever happens to the objects: it runs in its own session.
	defer func() {
		pid, stopErr := stopServe(opts.StateDir)
		if pid != 0 {
			fmt.Fprintf(out, "stopped opm serve (pid %d)\n", pid)
		}
		err = errors.Join(err, stopErr)
	}()
	c, err := newClient(opts.Config)
	if err != nil {
		return err
	}
	ns := opts.Namespace
	if err := CheckOLMCRDs(c.RESTMapper()); errors.Is(err, errNoOLM) {
		fmt.Fprintf(out, "cleanup-bundle: no OLM objects to delete: %v\n", err)
	} else if err != nil {
		return err
	} else if err := cleanupObjects(ctx, c, ns, out); err != nil {
		return err
	}
	fmt.Fprintf(out, "kept: the CRDs, every linstor.io object and namespace %s; the operands (LINSTOR) keep running without their operator.\n", ns)
	return nil
}

func cleanupObjects(ctx context.Context, c client.Client, ns string, out io.Writer) error {
	var subs operatorsv1alpha1.SubscriptionList
	if err := c.List(ctx, &subs, client.InNamespace(ns)); err != nil {
		return err
	}
	var owners []types.UID
	var csvs []string
	for i := range subs.Items {
		sub := &subs.Items[i]
		if sub.Spec == nil || sub.Spec.CatalogSource != CatalogSourceName || sub.Spec.CatalogSourceNamespace != ns {
			continue
		}
		owners = append(owners, sub.UID)
		for _, name := range []string{sub.Status.InstalledCSV, sub.Status.CurrentCSV, sub.Spec.StartingCSV} {
			if name != "" && !slices.Contains(csvs, name) {
				csvs = append(csvs, name)
			}
		}
		if err := deleteObject(ctx, c, sub, out); err != nil {
			return err
		}
	}
	for _, name := range csvs {
		csv := &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		if err := deleteObject(ctx, c, csv, out); err != nil {
			return err
		}
	}
	var plans operatorsv1alpha1.InstallPlanList
	if err := c.List(ctx, &plans, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range plans.Items {
		ip := &plans.Items[i]
		if slices.ContainsFunc(ip.OwnerReferences, func(o metav1.OwnerReference) bool { return slices.Contains(owners, o.UID) }) {
			if err := deleteObject(ctx, c, ip, out); err != nil {
				return err
			}
		}
	}
	cs := &operatorsv1alpha1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: CatalogSourceName, Namespace: ns}}
	if err := deleteObject(ctx, c, cs, out); err != nil {
		return err
	}
	var groups operatorsv1.OperatorGroupList
	if err := c.List(ctx, &groups, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range groups.Items {
		og := &groups.Items[i]
		if og.Annotations[CreatedByAnnotation] != createdByValue {
			fmt.Fprintf(out, "kept: OperatorGroup %s (run-bundle did not create it)\n", og.Name)
			continue
		}
		if err := deleteObject(ctx, c, og, out); err != nil {
			return err
		}
	}
	return nil
}

// deleteObject deletes obj, printing what it deleted; already gone is fine.
func deleteObject(ctx context.Context, c client.Client, obj client.Object, out io.Writer) error {
	err := c.Delete(ctx, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	gvk, _ := c.GroupVersionKindFor(obj)
	fmt.Fprintf(out, "deleted %s %s/%s\n", gvk.Kind, obj.GetNamespace(), obj.GetName())
	return nil
}
