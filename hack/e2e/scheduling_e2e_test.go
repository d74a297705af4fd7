// The test main of tarema's build of Kubernetes' e2e.test (hack/build-e2e.sh): the same
// wiring as k8s.io/kubernetes/test/e2e (flags, ginkgo/gomega, the suite's node check), but it
// imports only the [sig-scheduling] specs, so it builds in minutes instead of the whole suite's
// half hour and carries no storage, network or cloud code that kwok nodes cannot serve.
package schedulinge2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"k8s.io/component-base/logs"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"
	e2enode "k8s.io/kubernetes/test/e2e/framework/node"

	// The specs under test.
	_ "k8s.io/kubernetes/test/e2e/scheduling"

	// As upstream's e2e_test.go: a failed spec dumps its namespace's events and pods, and
	// every spec ends by checking that all nodes are still Ready.
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
	_ "k8s.io/component-base/logs/testinit"
)

func TestMain(m *testing.M) {
	showVersion := flag.CommandLine.Bool("version", false, "Displays version information.")
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	if *showVersion {
		fmt.Printf("%s\n", version.Get())
		os.Exit(0)
	}
	if flag.CommandLine.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unknown additional command line arguments: %s\n", flag.CommandLine.Args())
		os.Exit(1)
	}
	framework.AfterReadingAllFlags(&framework.TestContext)
	os.Exit(m.Run())
}

// Once per run, before any spec (upstream's setupSuite, without its cloud and DaemonSet
// parts): every node schedulable, and the node count the specs size themselves by.
var _ = ginkgo.SynchronizedBeforeSuite(func(ctx context.Context) []byte {
	c, err := framework.LoadClientset()
	framework.ExpectNoError(err, "loading the client")
	timeouts := framework.NewTimeoutContext()
	framework.ExpectNoError(e2enode.WaitForAllNodesSchedulable(ctx, c, timeouts.NodeSchedulable))
	if framework.TestContext.CloudConfig.NumNodes == framework.DefaultNumNodes {
		nodes, err := e2enode.GetReadySchedulableNodes(ctx, c)
		framework.ExpectNoError(err)
		framework.TestContext.CloudConfig.NumNodes = len(nodes.Items)
	}
	framework.Logf("e2e test version: %s", version.Get().GitVersion)
	return nil
}, func(ctx context.Context, _ []byte) {
	framework.TestContext.IPFamily = "ipv4"
})

func TestE2E(t *testing.T) {
	logs.InitLogs()
	defer logs.FlushLogs()
	klog.EnableContextualLogging(true)
	gomega.RegisterFailHandler(framework.Fail)
	suiteConfig, reporterConfig := framework.CreateGinkgoConfig()
	ginkgo.RunSpecs(t, "Kubernetes e2e suite ([sig-scheduling] only)", suiteConfig, reporterConfig)
}
