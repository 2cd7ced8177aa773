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

    CommandLine cmd(__FILE__);
    cmd.AddValue("rate", "link rate, Mbit/s", rateMbps);
    cmd.AddValue("rtt", "round-trip propagation delay, ms", rttMs);
    cmd.AddValue("loss", "packet loss probability of the data direction", loss);
    cmd.AddValue("time", "simulated seconds", seconds);
    cmd.AddValue("run", "RngRun (repetition)", run);
    cmd.AddValue("segment", "TCP segment size, bytes", segment);
    cmd.AddValue("queue", "drop-tail queue of the link, packets", queuePackets);
    cmd.AddValue("minrto", "minimum RTO, ms", minRtoMs);
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

    Simulator::Stop(Seconds(seconds));
    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    auto t1 = std::chrono::steady_clock::now();
    uint64_t bytes = DynamicCast<PacketSink>(ka.Get(0))->GetTotalRx();
    Simulator::Destroy();
    double wall = std::chrono::duration<double>(t1 - t0).count();
    std::printf("{\"rate_mbps\":%g,\"rtt_ms\":%g,\"loss\":%g,\"time_s\":%g,\"run\":%u,"
                "\"segment\":%u,\"bytes\":%llu,\"goodput_bps\":%.1f,\"wall_s\":%.4f}\n",
                rateMbps,
                rttMs,
                loss,
                seconds,
                run,
                segment,
                (unsigned long long)bytes,
                bytes * 8.0 / seconds,
                wall);
    return 0;
}
