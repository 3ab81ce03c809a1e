package webhooks

import (
	ctrl "sigs.k8s.io/controller-runtime"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Setup registers the validating webhooks and, through the builder, the /convert
// endpoint for every kind that has a v1alpha1 spoke.
func Setup(mgr ctrl.Manager) error {
	if err := ctrl.NewWebhookManagedBy(mgr).For(&linstorv1.LinstorCluster{}).
		WithValidator(&ClusterValidator{Reader: mgr.GetAPIReader()}).Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr).For(&linstorv1.LinstorSatelliteConfiguration{}).
		WithValidator(SatelliteConfigurationValidator{}).Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr).For(&linstorv1.LinstorNodeConnection{}).
		WithValidator(NodeConnectionValidator{}).Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr).For(&linstorv1.LinstorSatellite{}).
		WithValidator(SatelliteValidator{}).Complete()
}
