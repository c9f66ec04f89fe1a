#include "seedance/base/thread_name.h"

#include <pthread.h>

namespace seedance::base {

void NameThisThread(std::string_view name) {
  const std::string cut(name.substr(0, 15));
  pthread_setname_np(pthread_self(), cut.c_str());
}

std::string ThisThreadName() {
  char name[16] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof(name)) != 0) return "";
  return name;
}

}  // namespace seedance::base
