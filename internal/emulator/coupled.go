package emulator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Cluster is the Kubernetes cluster a coupled emulator follows.
type Cluster struct {
	Reader client.Reader
	// Namespace of the LinstorCluster's workloads.
	Namespace string
	// Interval between looks at the cluster; zero means one second.
	Interval time.Duration
	// Database, when set, keeps the emulator's state as LINSTOR's k8s backend does: in
	// CRDs of internal.linstor.linbit.com, loaded (and migrated) when a controller pod
	// starts and written while it runs. It needs a client without a cache.
	Database client.Client
	// DisksFromNodes: each Node's DisksAnnotation describes its machine's disks; a new
	// or changed value is applied with SetNodeDisks. Nodes are listed as metadata only.
	DisksFromNodes bool
}

// Couple makes the emulator follow the pods the operator deploys, as a real LINSTOR
// would, until ctx ends:
//   - a satellite is ONLINE only while its pod is Running, and reports the version of
//     its image (so it is VERSION_MISMATCH while its image differs from the controller's);
//   - the controller answers only while a controller pod is Running (when the operator
//     deploys one), reports the version of that pod's image, and forgets the master
//     passphrase when its pod is replaced;
//   - new nodes start OFFLINE until their satellite pod runs;
//   - event streams end when the controller pod goes away or is replaced;
//   - with DisksFromNodes, machines have the disks their Node's annotation lists.
func (e *Emulator) Couple(ctx context.Context, k Cluster) {
	e.mu.Lock()
	e.coupled, e.db = true, k.Database
	e.mu.Unlock()
	interval := k.Interval
	if interval == 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		_ = e.SyncWithCluster(ctx, k)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SyncWithCluster looks at the cluster once (Couple does it periodically).
func (e *Emulator) SyncWithCluster(ctx context.Context, k Cluster) error {
	var pods corev1.PodList
	if err := k.Reader.List(ctx, &pods, client.InNamespace(k.Namespace)); err != nil {
		return err
	}
	var deployments appsv1.DeploymentList
	if err := k.Reader.List(ctx, &deployments, client.InNamespace(k.Namespace), client.MatchingLabels{names.LabelName: names.ControllerName}); err != nil {
		return err
	}
	satellites := map[string]string{} // node -> version of its running satellite
	controllerPod, controllerVersion := "", ""
	var controllerPodName string
	for _, pod := range pods.Items {
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			continue
		}
		switch pod.Labels[names.LabelName] {
		case names.SatelliteComponent:
			satellites[pod.Spec.NodeName] = imageVersion(pod.Spec.Containers, names.SatelliteComponent)
		case names.ControllerName:
			controllerPod, controllerVersion = string(pod.UID), imageVersion(pod.Spec.Containers, names.ControllerName)
			controllerPodName = pod.Name
		}
	}

	e.mu.Lock()
	// Without a controller Deployment the emulator plays an external controller: always up.
	external := len(deployments.Items) == 0
	started := controllerPod != "" && controllerPod != e.controllerPod
	if started {
		e.controllerPod = controllerPod
		e.passphraseOpen = false // a new controller process starts locked
		e.controllerFailure = ""
		e.controllerStarting = true
	}
	if controllerPod == "" {
		e.controllerPod = ""
	}
	if started || !external && controllerPod == "" {
		e.endStreams() // the process that served the event streams is gone
	}
	if controllerVersion != "" {
		e.version = controllerVersion
	}
	for _, n := range e.nodes {
		if n.Type == "CONTROLLER" {
			continue
		}
		v, running := satellites[n.Name]
		e.setOnline(n, running)
		n.satelliteVersion = v
	}
	e.mu.Unlock()

	alive := func(ctx context.Context) error {
		var pod corev1.Pod
		if err := k.Reader.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: controllerPodName}, &pod); err != nil {
			return fmt.Errorf("controller pod %s: %w", controllerPodName, err)
		}
		if string(pod.UID) != controllerPod || pod.DeletionTimestamp != nil {
			return fmt.Errorf("controller pod %s is gone: its process writes nothing more", controllerPodName)
		}
		return nil
	}
	e.mu.Lock()
	e.alive = alive
	e.mu.Unlock()
	var dbErr error
	if k.Database != nil && !external {
		switch {
		case controllerPod != "" && e.isStarting():
			// A controller starting migrates and loads its database; until that works it
			// never answers. An injected migration or start failure is final for this
			// pod; anything else (the apiserver still publishing a new table) is tried
			// again, as the restarts of a crash-looping pod would.
			err := e.startController(ctx, k.Database, e.Version(), alive)
			e.mu.Lock()
			e.controllerFailure = ""
			e.controllerStarting = err != nil && !errors.Is(err, errStartRefused)
			if err != nil {
				e.controllerFailure = err.Error()
			}
			e.mu.Unlock()
			dbErr = err
		case controllerPod != "" && !e.failed():
			dbErr = e.persist(ctx, k.Database, alive)
		}
	}
	e.mu.Lock()
	e.controllerDown = !external && (controllerPod == "" || e.controllerFailure != "")
	e.mu.Unlock()
	if k.Database != nil {
		dbErr = errors.Join(dbErr, e.playRehearsals(ctx, k.Database, k.Namespace))
	}
	if k.DisksFromNodes {
		return errors.Join(dbErr, e.syncNodeDisks(ctx, k.Reader))
	}
	return dbErr
}

// syncNodeDisks applies the DisksAnnotation of every Node whose value changed since
// it was last seen. A value that does not parse is ignored: the machine keeps its
// disks. Nodes are listed as metadata, the annotations being all that is needed.
func (e *Emulator) syncNodeDisks(ctx context.Context, r client.Reader) error {
	var nodes metav1.PartialObjectMetadataList
	nodes.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "NodeList"})
	if err := r.List(ctx, &nodes); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := map[string]bool{}
	for _, n := range nodes.Items {
		value, ok := n.Annotations[DisksAnnotation]
		if !ok {
			continue
		}
		seen[n.Name] = true
		if last, known := e.diskAnnotations[n.Name]; known && last == value {
			continue
		}
		e.diskAnnotations[n.Name] = value
		if disks, err := ParseDisksAnnotation(value); err == nil {
			e.setNodeDisks(n.Name, disks)
		}
	}
	for name := range e.diskAnnotations {
		if !seen[name] {
			delete(e.diskAnnotations, name) // seen again, the value is applied again
		}
	}
	return nil
}

func (e *Emulator) isStarting() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.controllerStarting
}

func (e *Emulator) failed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.controllerFailure != ""
}

func (e *Emulator) isControllerDown() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.controllerDown
}

// imageVersion reads the LINSTOR version from an image tag such as
// "quay.io/piraeusdatastore/piraeus-server:v1.33.3"; "" (follow the controller) when
// the tag says nothing usable, e.g. a digest.
func imageVersion(containers []corev1.Container, name string) string {
	for _, c := range containers {
		if c.Name != name {
			continue
		}
		ref := c.Image
		if strings.Contains(ref, "@") {
			return ""
		}
		i := strings.LastIndex(ref, ":")
		if i < 0 || strings.Contains(ref[i:], "/") {
			return ""
		}
		v := strings.TrimPrefix(ref[i+1:], "v")
		if v == "" || v[0] < '0' || v[0] > '9' {
			return ""
		}
		return v
	}
	return ""
}
