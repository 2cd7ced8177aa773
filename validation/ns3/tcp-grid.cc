// One TCP NewReno flow over one ns-3 point-to-point link, for the validation of Tributary's
// `classic` profile and the side-by-side speed comparison (docs/experiments/validation-ns3.md,
// docs/performance.md). Written against ns-3.37 (Debian's libns3-dev); built by
// validation/ns3/build.sh.
//
// Topology: sender -- link (rate, one-way delay rtt/2, drop-tail queue) -- receiver. Random
// loss: a RateErrorModel (per packet, Bernoulli) on the receiver's device, so it hits the data
// direction only (ACKs are lossless, as Tributary's links by default); it is switched on at
// 0.75 RTT, after the SYN has arrived and before the first data segment does (Tributary has
// no handshake, a lost SYN would cost ns-3 a 3 s timeout).
//
// TCP: TcpNewReno, ns-3.37 defaults (SACK on, timestamps on, PRR recovery, delayed ACKs
// every 2 segments or 200 ms, initial window 10, minimum RTO 1 s, initial RTO 1 s) except:
// segment size (default 1400 bytes, Tributary's MSS) and 8 MiB socket buffers (ns-3's 128 KiB
// default would cap the window). Bulk sender for the whole run.
//
// Output: one JSON line: parameters, bytes received by the sink, goodput (bytes / time) and
// the wall time of Simulator::Run().

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cstdio>

using namespace ns3;

// Diagnostics (--trace=1): counters of the sender's TCP, printed in the JSON line. Used to
// compare ns-3's recovery with Tributary's `classic` profile (docs/experiments/validation-ns3.md).
struct Diag
{
    uint64_t rtos = 0;        // entries into CA_LOSS (retransmission timeouts)
    uint64_t recoveries = 0;  // entries into CA_RECOVERY (fast recovery)
    uint64_t dataSegs = 0;    // data segments sent
    uint64_t retxSegs = 0;    // of which retransmissions (sequence below the highest sent)
    uint64_t drops = 0;       // data packets dropped by the error model
    uint32_t highTx = 0;      // highest sequence sent + 1
    bool started = false;
    double cwndArea = 0.0;    // integral of cwnd (bytes x s), for the time-average
    double lastT = 0.0;
    uint32_t lastCwnd = 0;
    bool series = false;      // --trace=2: also a time series on stderr
    double recoveryTime = 0.0; // seconds spent in CA_RECOVERY or CA_LOSS
    double since = -1.0;
};

static Diag g_diag;

static void
OnCongState(TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t now)
{
    double t = Simulator::Now().GetSeconds();
    bool in = now == TcpSocketState::CA_LOSS || now == TcpSocketState::CA_RECOVERY;
    if (in && g_diag.since < 0.0)
    {
        g_diag.since = t;
    }
    else if (!in && g_diag.since >= 0.0)
    {
        g_diag.recoveryTime += t - g_diag.since;
        g_diag.since = -1.0;
    }
    if (g_diag.series)
    {
        std::fprintf(stderr, "state %.6f %d\n", t, int(now));
    }
    if (now == TcpSocketState::CA_LOSS)
    {
        g_diag.rtos++;
    }
    else if (now == TcpSocketState::CA_RECOVERY)
    {
        g_diag.recoveries++;
    }
}

static void
OnTx(Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>)
{
    if (p->GetSize() == 0)
    {
        return;
    }
    uint32_t seq = h.GetSequenceNumber().GetValue();
    g_diag.dataSegs++;
    if (g_diag.started && seq < g_diag.highTx)
    {
        g_diag.retxSegs++;
    }
    else
    {
        g_diag.highTx = seq + p->GetSize();
        g_diag.started = true;
    }
}

static void
OnCwnd(uint32_t, uint32_t now)
{
    double t = Simulator::Now().GetSeconds();
    g_diag.cwndArea += (t - g_diag.lastT) * g_diag.lastCwnd;
    g_diag.lastT = t;
    g_diag.lastCwnd = now;
    if (g_diag.series)
    {
        std::fprintf(stderr, "cwnd %.6f %u\n", t, now);
    }
}

static void
OnDrop(Ptr<const Packet>)
{
    g_diag.drops++;
}

static void
ConnectTraces()
{
    std::string s = "/NodeList/0/$ns3::TcpL4Protocol/SocketList/0/";
    Config::ConnectWithoutContext(s + "CongState", MakeCallback(&OnCongState));
    Config::ConnectWithoutContext(s + "Tx", MakeCallback(&OnTx));
    Config::ConnectWithoutContext(s + "CongestionWindow", MakeCallback(&OnCwnd));
}

static void
EnableLoss(Ptr<NetDevice> dev, double loss)
{
    Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
    em->SetAttribute("ErrorUnit", EnumValue(RateErrorModel::ERROR_UNIT_PACKET));
    em->SetAttribute("ErrorRate", DoubleValue(loss));
    em->AssignStreams(7);
    dev->SetAttribute("ReceiveErrorModel", PointerValue(em));
}

int
main(int argc, char* argv[])
{
    double rateMbps = 100.0;
    double rttMs = 100.0;
    double loss = 0.0;
    double seconds = 60.0;
    uint32_t run = 1;
    uint32_t segment = 1400;
    uint32_t queuePackets = 1000;
    double minRtoMs = 1000.0;
    uint32_t trace = 0;

    CommandLine cmd(__FILE__);
    cmd.AddValue("rate", "link rate, Mbit/s", rateMbps);
    cmd.AddValue("rtt", "round-trip propagation delay, ms", rttMs);
    cmd.AddValue("loss", "packet loss probability of the data direction", loss);
    cmd.AddValue("time", "simulated seconds", seconds);
    cmd.AddValue("run", "RngRun (repetition)", run);
    cmd.AddValue("segment", "TCP segment size, bytes", segment);
    cmd.AddValue("queue", "drop-tail queue of the link, packets", queuePackets);
    cmd.AddValue("minrto", "minimum RTO, ms", minRtoMs);
    cmd.AddValue("trace", "1: add the sender's TCP counters to the output; 2: also cwnd and state series on stderr", trace);
    cmd.Parse(argc, argv);

    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(run);

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segment));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(8 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(8 << 20));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(minRtoMs)));

    NodeContainer nodes;
    nodes.Create(2);
    PointToPointHelper p2p;
    std::ostringstream rate;
    rate << rateMbps << "Mbps";
    p2p.SetDeviceAttribute("DataRate", StringValue(rate.str()));
    p2p.SetChannelAttribute("Delay", TimeValue(MicroSeconds(rttMs * 500.0)));
    std::ostringstream q;
    q << queuePackets << "p";
    p2p.SetQueue("ns3::DropTailQueue", "MaxSize", QueueSizeValue(QueueSize(q.str())));
    NetDeviceContainer devs = p2p.Install(nodes);

    InternetStackHelper stack;
    stack.Install(nodes);
    Ipv4AddressHelper addr;
    addr.SetBase("10.1.1.0", "255.255.255.0");
    Ipv4InterfaceContainer ifs = addr.Assign(devs);
    // No queue disc in front of the device (Assign installs pfifo_fast): the link's drop-tail
    // queue is the only queue, as in Tributary's link model.
    TrafficControlHelper tch;
    tch.Uninstall(devs);

    uint16_t port = 5000;
    BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(ifs.GetAddress(1), port));
    src.SetAttribute("MaxBytes", UintegerValue(0));
    src.SetAttribute("SendSize", UintegerValue(segment));
    ApplicationContainer sa = src.Install(nodes.Get(0));
    sa.Start(Seconds(0.0));
    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer ka = sink.Install(nodes.Get(1));
    ka.Start(Seconds(0.0));

    if (loss > 0.0)
    {
        Simulator::Schedule(MilliSeconds(rttMs * 0.75), &EnableLoss, devs.Get(1), loss);
    }

    if (trace)
    {
        g_diag.series = trace >= 2;
        Simulator::Schedule(MilliSeconds(1), &ConnectTraces);
        devs.Get(1)->TraceConnectWithoutContext("PhyRxDrop", MakeCallback(&OnDrop));
    }

    Simulator::Stop(Seconds(seconds));
    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    auto t1 = std::chrono::steady_clock::now();
    uint64_t bytes = DynamicCast<PacketSink>(ka.Get(0))->GetTotalRx();
    if (trace)
    {
        OnCwnd(0, g_diag.lastCwnd);
        if (g_diag.since >= 0.0)
        {
            g_diag.recoveryTime += Simulator::Now().GetSeconds() - g_diag.since;
        }
    }
    Simulator::Destroy();
    double wall = std::chrono::duration<double>(t1 - t0).count();
    std::string extra;
    if (trace)
    {
        std::ostringstream e;
        e << ",\"rtos\":" << g_diag.rtos << ",\"recoveries\":" << g_diag.recoveries
          << ",\"data_segments\":" << g_diag.dataSegs << ",\"retransmitted\":" << g_diag.retxSegs
          << ",\"dropped\":" << g_diag.drops
          << ",\"mean_cwnd_segments\":" << g_diag.cwndArea / seconds / segment
          << ",\"recovery_s\":" << g_diag.recoveryTime;
        extra = e.str();
    }
    std::printf("{\"rate_mbps\":%g,\"rtt_ms\":%g,\"loss\":%g,\"time_s\":%g,\"run\":%u,"
                "\"segment\":%u,\"bytes\":%llu,\"goodput_bps\":%.1f,\"wall_s\":%.4f%s}\n",
                rateMbps,
                rttMs,
                loss,
                seconds,
                run,
                segment,
                (unsigned long long)bytes,
                bytes * 8.0 / seconds,
                wall,
                extra.c_str());
    return 0;
}
