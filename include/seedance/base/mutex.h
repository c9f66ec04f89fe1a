// The project's mutexes: std::mutex and std::shared_mutex wrapped so that clang's thread-safety
// analysis can check the lock discipline (issue 36; ../shared/STYLE.md "Lock discipline in
// annotations").
//
// Every mutex-protected member carries ABSL_GUARDED_BY(mu) (absl/base/thread_annotations.h, the
// macros of the Abseil the project already links), a function that expects the caller to hold a
// lock says ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu), and a lambda that runs under the lock (a condition
// variable's predicate) says so too:
//
//   base::Mutex mu_;
//   std::condition_variable cv_;
//   int pending_ ABSL_GUARDED_BY(mu_) = 0;
//   ...
//   base::MutexLock lock(mu_);
//   lock.Wait(cv_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return pending_ == 0; });
//
// The analysis runs in clang only (tools/analysis/thread_safety.py, a CTest check, compiles every
// file that uses these types with -Wthread-safety -Werror); in gcc the annotations are empty.
// Underneath are the standard mutexes, so ThreadSanitizer, the condition variables and the
// performance are those of std::mutex (Abseil's own Mutex, prebuilt by Debian without TSan hooks,
// would blind ThreadSanitizer).
//
// Thread-safety: as std::mutex and std::shared_mutex. A MutexLock, WriterMutexLock or
// ReaderMutexLock belongs to the thread that made it.
#ifndef SEEDANCE_BASE_MUTEX_H_
#define SEEDANCE_BASE_MUTEX_H_

#include <condition_variable>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "absl/base/thread_annotations.h"

namespace seedance::base {

// An exclusive mutex the analysis knows. Prefer MutexLock to Lock/Unlock.
class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds the lock where it cannot see it (checked by nothing).
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope. Unlock() and Lock() release and retake it inside the scope (the
// analysis follows both); the destructor releases it if held. Wait, WaitFor and WaitUntil are
// std::condition_variable's wait, wait_for and wait_until on this lock: the mutex is released while
// waiting and held again when they return, and a predicate runs with it held (annotate the lambda
// with ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) when it reads guarded members).
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : lock_(mu.mu_) {}
  ~MutexLock() ABSL_UNLOCK_FUNCTION() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() ABSL_UNLOCK_FUNCTION() { lock_.unlock(); }
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { lock_.lock(); }

  template <typename... Args>
  auto Wait(std::condition_variable& cv, Args&&... args) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return cv.wait(lock_, std::forward<Args>(args)...);
  }
  template <typename... Args>
  auto WaitFor(std::condition_variable& cv, Args&&... args) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return cv.wait_for(lock_, std::forward<Args>(args)...);
  }
  template <typename... Args>
  auto WaitUntil(std::condition_variable& cv, Args&&... args) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return cv.wait_until(lock_, std::forward<Args>(args)...);
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

// A reader-writer mutex the analysis knows: many readers or one writer.
class ABSL_LOCKABLE SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() { mu_.lock_shared(); }
  void ReaderUnlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex exclusively for its scope.
class ABSL_SCOPED_LOCKABLE WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_.Lock();
  }
  ~WriterMutexLock() ABSL_UNLOCK_FUNCTION() { mu_.Unlock(); }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

// Holds a SharedMutex shared (with other readers) for its scope.
class ABSL_SCOPED_LOCKABLE ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex& mu) ABSL_SHARED_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_.ReaderLock();
  }
  ~ReaderMutexLock() ABSL_UNLOCK_FUNCTION() { mu_.ReaderUnlock(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

}  // namespace seedance::base

#endif  // SEEDANCE_BASE_MUTEX_H_
