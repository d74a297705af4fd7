// hostpath-provisioner: the local cluster's dynamic provisioner, so that a claim of a
// WaitForFirstConsumer StorageClass gets a volume once a scheduler chose its node. It is
// sigs.k8s.io/sig-storage-lib-external-provisioner's ProvisionController (the library the
// upstream external provisioners are built on: it watches claims, waits for
// volume.kubernetes.io/selected-node on delayed-binding claims, creates the PV, and removes the
// annotation to ask for another node when provisioning fails) with the smallest Provisioner
// behind it: a directory under -root per volume, exposed as a hostPath PersistentVolume whose
// node affinity is the node the scheduler selected (kwok nodes run no kubelet, so nothing ever
// mounts it; the directory only makes the volume's life real on this machine).
//
// hack/build-controlplane.sh builds it from the Go module proxy; hack/cluster.sh starts it
// (component "provisioner") with -name tarema.local/hostpath.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

type hostPath struct{ root string }

func (h *hostPath) Provision(ctx context.Context, o controller.ProvisionOptions) (*v1.PersistentVolume, controller.ProvisioningState, error) {
	if o.PVC.Spec.Selector != nil {
		return nil, controller.ProvisioningFinished, errors.New("claim selectors are not supported")
	}
	dir := filepath.Join(h.root, o.PVName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: o.PVName},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: *o.StorageClass.ReclaimPolicy,
			AccessModes:                   o.PVC.Spec.AccessModes,
			VolumeMode:                    o.PVC.Spec.VolumeMode,
			Capacity:                      v1.ResourceList{v1.ResourceStorage: o.PVC.Spec.Resources.Requests[v1.ResourceStorage]},
			PersistentVolumeSource:        v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: dir}},
		},
	}
	// A hostPath lives on one node: the one the scheduler chose (delayed binding). An
	// immediate claim has no selected node, and its volume no affinity.
	if o.SelectedNodeName != "" {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{
				Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{o.SelectedNodeName},
			}}}},
		}}
	}
	return pv, controller.ProvisioningFinished, nil
}

func (h *hostPath) Delete(ctx context.Context, pv *v1.PersistentVolume) error {
	if pv.Spec.HostPath == nil || filepath.Dir(pv.Spec.HostPath.Path) != h.root {
		return &controller.IgnoredError{Reason: "not a volume of this provisioner"}
	}
	return os.RemoveAll(pv.Spec.HostPath.Path)
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	name := flag.String("name", "tarema.local/hostpath", "provisioner name (StorageClass.provisioner)")
	root := flag.String("root", "", "directory holding the volumes")
	klog.InitFlags(nil)
	flag.Parse()
	if *kubeconfig == "" || *root == "" {
		fmt.Fprintln(os.Stderr, "hostpath-provisioner: -kubeconfig and -root are required")
		os.Exit(2)
	}
	abs, err := filepath.Abs(*root)
	if err != nil {
		klog.Fatalf("-root %q: %v", *root, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.Fatalf("kubeconfig %s: %v", *kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		klog.Fatalf("client: %v", err)
	}
	ctx := context.Background()
	pc := controller.NewProvisionController(ctx, client, *name, &hostPath{root: abs},
		controller.LeaderElection(false))
	pc.Run(ctx)
}
