// deploy/kubernetes/ against the code it configures: the scheduler profile calls the extender at
// the routes and port the server serves, scores every node, sends names only, and manages the
// resources the decoder understands; the extender's RBAC allows exactly what bind does.
// The files as deploy/kubernetes/kustomization.yaml loads them (base/, components/); the rendered
// whole is checked by tools/release/kustomize_test.py (ctest deploy_kustomize_test).
#include <cstdlib>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "seedance/k8s/objects.h"
#include "yaml-cpp/yaml.h"

namespace seedance::k8s {
namespace {

// PATH under deploy/kubernetes/, e.g. "base/extender.yaml".
std::string Deploy(const std::string& path) {
  const char* root = std::getenv("SEEDANCE_SOURCE_DIR");
  return std::string(root ? root : ".") + "/deploy/kubernetes/" + path;
}

TEST(DeployTest, SchedulerProfileCallsTheExtenderAsServed) {
  YAML::Node c = YAML::LoadFile(Deploy("base/scheduler-config.yaml"));
  EXPECT_EQ(c["apiVersion"].as<std::string>(), "kubescheduler.config.k8s.io/v1");
  EXPECT_EQ(c["kind"].as<std::string>(), "KubeSchedulerConfiguration");
  ASSERT_EQ(c["profiles"].size(), 1u);
  EXPECT_EQ(c["profiles"][0]["percentageOfNodesToScore"].as<int>(), 100);
  ASSERT_EQ(c["extenders"].size(), 1u);
  const YAML::Node e = c["extenders"][0];
  const std::string url = e["urlPrefix"].as<std::string>();
  const std::string prefix = "/k8s/extender/v1";
  EXPECT_EQ(url.substr(url.size() - prefix.size()), prefix) << url;
  EXPECT_NE(url.find(":7070/"), std::string::npos) << url;
  EXPECT_EQ(e["filterVerb"].as<std::string>(), "filter");
  EXPECT_EQ(e["prioritizeVerb"].as<std::string>(), "prioritize");
  EXPECT_EQ(e["bindVerb"].as<std::string>(), "bind");
  EXPECT_EQ(e["preemptVerb"].as<std::string>(), "preempt");
  EXPECT_TRUE(e["nodeCacheCapable"].as<bool>());
  EXPECT_FALSE(e["ignorable"].as<bool>());
  const std::set<std::string> understood = {kGpuMilliResource, kGpuCountResource,
                                            kGpuMemoryResource, kNvidiaGpuResource};
  ASSERT_TRUE(e["managedResources"].IsSequence());
  for (const YAML::Node& r : e["managedResources"]) {
    EXPECT_TRUE(understood.contains(r["name"].as<std::string>())) << r["name"].as<std::string>();
  }
}

TEST(DeployTest, ExtenderMayDoWhatBindDoesAndServesThePort) {
  bool patch = false, binding = false, in_cluster = false, port = false;
  for (const YAML::Node& doc : YAML::LoadAllFromFile(Deploy("base/extender.yaml"))) {
    const std::string kind = doc["kind"].as<std::string>();
    if (kind == "ClusterRole") {
      for (const YAML::Node& rule : doc["rules"]) {
        for (const YAML::Node& res : rule["resources"]) {
          for (const YAML::Node& verb : rule["verbs"]) {
            patch |= res.as<std::string>() == "pods" && verb.as<std::string>() == "patch";
            binding |=
                res.as<std::string>() == "pods/binding" && verb.as<std::string>() == "create";
          }
        }
      }
    }
    if (kind == "Deployment") {
      const YAML::Node c = doc["spec"]["template"]["spec"]["containers"][0];
      for (const YAML::Node& a : c["args"]) {
        in_cluster |= a.as<std::string>() == "--kube-in-cluster";
        port |= a.as<std::string>() == "--listen=0.0.0.0:7070";
      }
    }
  }
  EXPECT_TRUE(patch);
  EXPECT_TRUE(binding);
  EXPECT_TRUE(in_cluster);
  EXPECT_TRUE(port);
}

// The device plugin's DaemonSet: runs `device-plugin` in the cluster with the kubelet's folder
// mounted where the command looks for it, knows its node (the pod watch's field selector) and
// may list and watch pods.
TEST(DeployTest, DevicePluginSeesTheKubeletsFolderItsNodeAndThePods) {
  bool watch = false, command = false, in_cluster = false, mounted = false, node = false;
  const std::string manifest = Deploy("components/device-plugin/device-plugin.yaml");
  for (const YAML::Node& doc : YAML::LoadAllFromFile(manifest)) {
    const std::string kind = doc["kind"].as<std::string>();
    if (kind == "ClusterRole") {
      for (const YAML::Node& rule : doc["rules"]) {
        for (const YAML::Node& verb : rule["verbs"]) {
          watch |= rule["resources"][0].as<std::string>() == "pods" &&
                   verb.as<std::string>() == "watch";
        }
      }
    }
    if (kind == "DaemonSet") {
      const YAML::Node spec = doc["spec"]["template"]["spec"];
      const YAML::Node c = spec["containers"][0];
      command = c["args"][0].as<std::string>() == "device-plugin";
      for (const YAML::Node& a : c["args"]) in_cluster |= a.as<std::string>() == "--kube-in-cluster";
      for (const YAML::Node& m : c["volumeMounts"]) {
        mounted |= m["mountPath"].as<std::string>() == "/var/lib/kubelet/device-plugins";
      }
      for (const YAML::Node& e : c["env"]) {
        node |= e["name"].as<std::string>() == "NODE_NAME" &&
                e["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>() == "spec.nodeName";
      }
      EXPECT_EQ(spec["volumes"][0]["hostPath"]["path"].as<std::string>(),
                "/var/lib/kubelet/device-plugins");
    }
  }
  EXPECT_TRUE(watch);
  EXPECT_TRUE(command);
  EXPECT_TRUE(in_cluster);
  EXPECT_TRUE(mounted);
  EXPECT_TRUE(node);
}

}  // namespace
}  // namespace seedance::k8s
