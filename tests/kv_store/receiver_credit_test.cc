#include "kv_store/receiver_credit.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace switchyard::kv_store {
namespace {

ReceiverCreditLimits Limits() { return {/*per_sender=*/100, /*total=*/150, /*transfers=*/3}; }

TEST(ReceiverCreditTest, PerSenderLimitRefusesNamingItAndChargesNothing) {
  ReceiverCredit c(Limits());
  std::string why;
  EXPECT_EQ(c.Charge(1, 60, &why), RejectReason::kNone);
  EXPECT_EQ(c.Charge(1, 41, &why), RejectReason::kCredit);
  EXPECT_NE(why.find("per-sender limit of 100 B"), std::string::npos) << why;
  EXPECT_NE(why.find("put of 41 B from sender 1"), std::string::npos) << why;
  EXPECT_NE(why.find("60 B in use"), std::string::npos) << why;
  EXPECT_EQ(c.State().in_use_bytes, 60u);
  EXPECT_EQ(c.State().refused, 1u);
  EXPECT_EQ(c.Charge(1, 40, &why), RejectReason::kNone);  // exactly the limit
  EXPECT_EQ(c.State().max_sender_in_use_bytes, 100u);
}

TEST(ReceiverCreditTest, TotalLimitBindsAcrossSenders) {
  ReceiverCredit c(Limits());
  std::string why;
  ASSERT_EQ(c.Charge(1, 100, &why), RejectReason::kNone);
  EXPECT_EQ(c.Charge(2, 60, &why), RejectReason::kCredit);
  EXPECT_NE(why.find("total (incast) limit of 150 B"), std::string::npos) << why;
  EXPECT_NE(why.find("100 B in use"), std::string::npos) << why;
  EXPECT_EQ(c.Charge(2, 50, &why), RejectReason::kNone);
  EXPECT_EQ(c.State().in_use_bytes, 150u);
  EXPECT_EQ(c.Charge(3, 1, &why), RejectReason::kCredit);
  c.Return(1, 100);  // committed: the credit is free for anyone
  EXPECT_EQ(c.State().in_use_bytes, 50u);
  EXPECT_EQ(c.Charge(3, 100, &why), RejectReason::kNone);
  EXPECT_EQ(c.State().max_in_use_bytes, 150u);
  EXPECT_EQ(c.State().refused, 2u);
}

TEST(ReceiverCreditTest, TransferSlotsPerSender) {
  ReceiverCredit c(Limits());
  std::string why;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(c.Charge(7, 1, &why), RejectReason::kNone);
  EXPECT_EQ(c.Charge(7, 1, &why), RejectReason::kCredit);
  EXPECT_NE(why.find("per-sender transfer limit of 3 puts"), std::string::npos) << why;
  EXPECT_EQ(c.Charge(8, 1, &why), RejectReason::kNone);  // another sender has its own
  c.Return(7, 1);
  EXPECT_EQ(c.Charge(7, 1, &why), RejectReason::kNone);
  EXPECT_EQ(c.State().max_sender_in_use_transfers, 3u);
}

TEST(ReceiverCreditTest, ReturnOfUnknownSenderIsIgnored) {
  ReceiverCredit c(Limits());
  c.Return(9, 10);
  EXPECT_EQ(c.State().in_use_bytes, 0u);
  std::string why;
  ASSERT_EQ(c.Charge(1, 10, &why), RejectReason::kNone);
  c.Return(2, 10);  // not sender 2's
  EXPECT_EQ(c.State().in_use_bytes, 10u);
}

// Threads charging and returning at once never take the ledger past a limit, and every
// charge comes back. A thread may run all its rounds while descheduled threads hold the
// whole budget (then every charge is refused, rightly), so each keeps going until it has
// been granted once: credit comes back as the others return theirs.
TEST(ReceiverCreditTest, ConcurrentSendersStayWithinLimits) {
  ReceiverCredit c({/*per_sender=*/64, /*total=*/128, /*transfers=*/4});
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<int> charged(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&c, &charged, t] {
      std::vector<uint64_t> held;
      for (int i = 0; i < 2000 || charged[t] == 0; ++i) {
        uint64_t bytes = 8 + (i * 7 + t) % 24;
        if (c.Charge(t, bytes, nullptr) == RejectReason::kNone) {
          held.push_back(bytes);
          ++charged[t];
        }
        if (held.size() >= 3 || (i % 5 == 0 && !held.empty())) {
          c.Return(t, held.front());
          held.erase(held.begin());
        }
      }
      for (uint64_t b : held) c.Return(t, b);
    });
  }
  for (auto& th : threads) th.join();
  ReceiverCreditState s = c.State();
  EXPECT_EQ(s.in_use_bytes, 0u);
  EXPECT_LE(s.max_in_use_bytes, 128u);
  EXPECT_LE(s.max_sender_in_use_bytes, 64u);
  EXPECT_LE(s.max_sender_in_use_transfers, 4u);
}

}  // namespace
}  // namespace switchyard::kv_store
