// Tests of Foyer.cs: the shared golden packets, a scripted lobby on a real
// loopback socket, and, given a lobby's address, a real lobby:
//
//     mono FoyerTest.exe GOLDEN_JSON [HOST:PORT [N]]
//
// With N, it prints instead of the live tests the mean round trip of N
// LISTs and of N JOINs (the extension's, answered EXT_REFUSED) there.
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Threading.Tasks;
using Foyer;

// Json reads golden.json: objects, arrays, strings without escapes but
// quotes, numbers, booleans.
sealed class Json
{
    readonly string s;
    int i;
    Json(string s) { this.s = s; }

    public static object Parse(string s) => new Json(s).Value();

    void Ws() { while (i < s.Length && char.IsWhiteSpace(s[i])) i++; }

    object Value()
    {
        Ws();
        char c = s[i];
        if (c == '{' || c == '[')
        {
            i++;
            var obj = new Dictionary<string, object>();
            var arr = new List<object>();
            for (Ws(); s[i] != '}' && s[i] != ']'; Ws())
            {
                if (c == '{')
                {
                    string k = (string)Value();
                    Ws();
                    i++; // :
                    obj[k] = Value();
                }
                else arr.Add(Value());
                Ws();
                if (s[i] == ',') i++;
            }
            i++;
            return c == '{' ? (object)obj : arr;
        }
        if (c == '"')
        {
            int start = ++i;
            while (s[i] != '"') i += s[i] == '\\' ? 2 : 1;
            return s.Substring(start, i++ - start);
        }
        if (s.Substring(i).StartsWith("true")) { i += 4; return true; }
        if (s.Substring(i).StartsWith("false")) { i += 5; return false; }
        int from = i;
        while (i < s.Length && "-+.eE0123456789".IndexOf(s[i]) >= 0) i++;
        return double.Parse(s.Substring(from, i - from), System.Globalization.CultureInfo.InvariantCulture);
    }
}

static class FoyerTest
{
    static int checks, failures;

    static void Check(bool ok, string what)
    {
        checks++;
        if (ok) return;
        failures++;
        Console.Error.WriteLine("FAIL: " + what);
    }

    static async Task Throws<T>(Func<Task> f, string what) where T : Exception
    {
        try
        {
            await f();
            Check(false, what + ": no exception");
        }
        catch (T)
        {
            Check(true, what);
        }
        catch (Exception e)
        {
            Check(false, what + ": " + e.GetType().Name + ": " + e.Message);
        }
    }

    static object Get(object o, string k)
    {
        object v;
        return ((Dictionary<string, object>)o).TryGetValue(k, out v) ? v : null;
    }

    static string Str(object o, string k) => (string)Get(o, k) ?? "";
    static double Num(object o, string k) => Get(o, k) is double ? (double)Get(o, k) : 0;
    static bool Bool(object o, string k) => Get(o, k) is bool && (bool)Get(o, k);
    static List<object> Arr(object o, string k) => (List<object>)Get(o, k) ?? new List<object>();

    static byte[] Unhex(string h) =>
        Enumerable.Range(0, h.Length / 2).Select(i => Convert.ToByte(h.Substring(2 * i, 2), 16)).ToArray();

    static string Hex(byte[] b) => string.Concat(b.Select(x => x.ToString("x2")));

    static string Upper(MessageType t)
    {
        var s = new StringBuilder();
        foreach (char c in t.ToString())
        {
            if (char.IsUpper(c) && s.Length > 0) s.Append('_');
            s.Append(char.ToUpperInvariant(c));
        }
        return s.ToString();
    }

    static void TestGolden(object g)
    {
        int encoded = 0;
        foreach (var p in Arr(g, "packets"))
        {
            string name = Str(p, "name"), hex = Str(p, "hex");
            var b = Unhex(hex);
            Message m;
            try { m = Codec.Decode(b, b.Length); }
            catch (MalformedPacketException e) { Check(false, name + ": " + e.Message); continue; }
            Check(Upper(m.Type) == Str(p, "type") && m.Framing.ToString().ToLowerInvariant() == Str(p, "framing"), name + ": type or framing");
            Check(m.Seq == Num(p, "seq") && m.Tick == Num(p, "tick") && m.Compressed == Bool(p, "compressed"), name + ": seq, tick or compressed");
            Check(m.Room == Num(p, "room") && m.Port == Num(p, "port"), name + ": room or port");
            var want = Arr(p, "rooms");
            Check(m.Rooms.Count == want.Count, name + ": room count " + m.Rooms.Count);
            for (int i = 0; i < Math.Min(want.Count, m.Rooms.Count); i++)
            {
                Room r = m.Rooms[i];
                Check(r.Id == Num(want[i], "id") && r.Players == Num(want[i], "players") && r.MaxPlayers == Num(want[i], "max_players") &&
                      r.Port == Num(want[i], "port") && r.State.ToString().ToLowerInvariant() == Str(want[i], "state"), name + ": room " + i);
            }
            if (m.Type == MessageType.ListRooms || m.Type == MessageType.CreateRoom || m.Type == MessageType.JoinRoom)
            {
                var again = Codec.EncodeRequest(m.Type, (ushort)Num(p, "seq"), m.Framing, (uint)Num(p, "tick"), (uint)Num(p, "room"));
                Check(Hex(again) == hex, name + ": encodes to " + Hex(again));
                encoded++;
            }
            for (int cut = 0; cut < b.Length; cut++)
            {
                try
                {
                    Codec.Decode(b, cut);
                    Check(false, name + ": prefix " + cut + " decodes");
                }
                catch (MalformedPacketException) { }
            }
        }
        Check(encoded >= 6, "requests encoded: " + encoded);
        foreach (var p in Arr(g, "malformed").Concat(Arr(g, "ext_malformed")))
        {
            var b = Unhex(Str(p, "hex"));
            string why = "";
            try { Codec.Decode(b, b.Length); }
            catch (MalformedPacketException e) { why = e.Reason; }
            Check(why == Str(p, "reason"), Str(p, "name") + ": refused as '" + why + "', want " + Str(p, "reason"));
        }
        TestExtGolden(g);
    }

    static Dictionary<string, string> TagsOf(object pairs) =>
        pairs == null ? null : ((List<object>)pairs).Cast<List<object>>().ToDictionary(t => (string)t[0], t => (string)t[1]);

    static string TagsText(IEnumerable<KeyValuePair<string, string>> tags) =>
        string.Join(",", tags.Select(t => t.Key + "=" + t.Value));

    static void TestExtGolden(object g)
    {
        int encoded = 0, decoded = 0;
        foreach (var p in Arr(g, "ext"))
        {
            string name = Str(p, "name"), hex = Str(p, "hex");
            var m = Get(p, "msg");
            var type = (MessageType)Enum.Parse(typeof(MessageType), string.Concat(Str(m, "type").Split('_').Select(w => w[0] + w.Substring(1).ToLowerInvariant())));
            var framing = Str(m, "framing") == "legacy" ? Framing.Legacy : Framing.Compact;
            var b = Unhex(hex);
            if ((int)type % 2 == 0)
            {
                var f = Get(m, "filter");
                var meta = Get(m, "meta");
                var req = new ExtRequest
                {
                    Type = type, Seq = (ushort)Num(m, "seq"), Framing = framing, Tick = (uint)Num(m, "tick"),
                    Token = Str(m, "token") == "" ? null : Unhex(Str(m, "token")), Pad = (int)Num(m, "pad"),
                    Client = Str(m, "client") == "" ? new byte[8] : Unhex(Str(m, "client")),
                    Cursor = (uint)Num(m, "cursor"), Limit = (byte)Num(m, "limit"), Room = (uint)Num(m, "room"), Code = Str(m, "code"),
                    Filter = f == null ? null : new Filter
                    {
                        State = Num(f, "states") == 0 ? (RoomState?)null : (RoomState)(int)Math.Log(Num(f, "states"), 2),
                        FreeSeats = (int)Num(f, "min_free"), Mode = Str(f, "mode"), Map = Str(f, "map"), NamePrefix = Str(f, "name_prefix"),
                        Tags = TagsOf(Get(f, "tags")),
                    },
                    Options = meta == null ? null : new CreateOptions
                    {
                        Name = Str(meta, "name"), Mode = Str(meta, "mode"), Map = Str(meta, "map"), Tags = TagsOf(Get(meta, "tags")),
                        Private = Bool(m, "private"), Password = Str(m, "password"),
                    },
                    Password = meta == null ? Str(m, "password") : null,
                    SeatToken = Str(m, "seat_token") == "" ? null : Unhex(Str(m, "seat_token")),
                };
                var again = Hex(Codec.EncodeExt(req));
                Check(again == hex, name + ": encodes to " + again);
                encoded++;
                continue;
            }
            Message d;
            try { d = Codec.Decode(b, b.Length); }
            catch (MalformedPacketException e) { Check(false, name + ": " + e.Message); continue; }
            decoded++;
            Check(d.Type == type && d.Framing == framing && d.Seq == Num(m, "seq") && d.Tick == Num(m, "tick"), name + ": header");
            Check(Hex(d.Token ?? new byte[0]) == Str(m, "token") && d.Room == Num(m, "room") && d.Code == Str(m, "code") &&
                  d.Port == Num(m, "port") && (d.Address?.ToString() ?? "") == Str(m, "addr") &&
                  Hex(d.SeatToken ?? new byte[0]) == Str(m, "seat_token") && d.Next == Num(m, "next") && (int)d.Reason == Num(m, "reason"),
                  name + ": fields");
            var want = Arr(m, "entries");
            Check(d.Rooms.Count == want.Count, name + ": entries");
            for (int i = 0; i < Math.Min(want.Count, d.Rooms.Count); i++)
            {
                Room r = d.Rooms[i];
                var w = want[i];
                Check(r.Id == Num(w, "id") && r.Players == Num(w, "players") && r.MaxPlayers == Num(w, "max_players") && r.Port == Num(w, "port") &&
                      r.State.ToString().ToLowerInvariant() == Str(w, "state") && r.HasPassword == Bool(w, "password") && r.Code == Str(w, "code") &&
                      r.Name == Str(w, "name") && r.Mode == Str(w, "mode") && r.Map == Str(w, "map") &&
                      TagsText(r.Tags) == TagsText(TagsOf(Get(w, "tags"))), name + ": entry " + i);
            }
            for (int cut = 0; cut < b.Length; cut++)
            {
                try
                {
                    Codec.Decode(b, cut);
                    Check(false, name + ": prefix " + cut + " decodes");
                }
                catch (MalformedPacketException) { }
            }
        }
        Check(encoded >= 10 && decoded >= 9, "extension goldens: " + encoded + " encoded, " + decoded + " decoded");
    }

    static byte[] Reply(byte[] req, MessageType t, params byte[] payload)
    {
        var b = new byte[8 + payload.Length + 4];
        ushort seq = (ushort)(req[0] == 0xA3 ? req[7] << 8 | req[8] : req[2] << 8 | req[3]);
        b[0] = 2; b[1] = (byte)t; b[2] = (byte)(seq >> 8); b[3] = (byte)seq;
        b[5] = (byte)payload.Length; b[7] = (byte)payload.Length;
        Array.Copy(payload, 0, b, 8, payload.Length);
        uint crc = Codec.Crc32(b, 0, 8 + payload.Length);
        for (int i = 0; i < 4; i++) b[8 + payload.Length + i] = (byte)(crc >> (24 - 8 * i));
        return b;
    }

    static int TypeOf(byte[] req) => req[req[0] == 0xA3 ? 6 : 1];
    static byte[] EmptyList(byte[] req) => Reply(req, MessageType.RoomList, 0, 0);
    static readonly byte[] SeatToken = new byte[] { 1 }.Concat(new byte[20]).Concat(new byte[] { 0x65, 0x53, 0xF1, 0 }).Concat(new byte[16]).ToArray();

    static byte[] SeatReply(byte[] req, byte room, params byte[] addr) =>
        Reply(req, MessageType.ExtSeat, new byte[] { 1, 0, 0, 0, room, 0x75, 0x30 }.Concat(Encoding.ASCII.GetBytes("ABCDEF"))
            .Concat(new[] { (byte)addr.Length }).Concat(addr).Concat(new[] { (byte)SeatToken.Length }).Concat(SeatToken).ToArray());

    // Lobby answers each request with script(index, request). Unless it speaks
    // the extension, it drops extension requests (counted in Ext).
    sealed class Lobby : IDisposable
    {
        public readonly UdpClient Udp = new UdpClient(new IPEndPoint(IPAddress.Loopback, 0));
        public readonly List<byte[]> Requests = new List<byte[]>(), Ext = new List<byte[]>();
        public string Addr => "127.0.0.1:" + ((IPEndPoint)Udp.Client.LocalEndPoint).Port;

        public Lobby(Func<int, byte[], byte[][]> script, bool speaks = false)
        {
            Task.Run(async () =>
            {
                while (true)
                {
                    UdpReceiveResult r;
                    try { r = await Udp.ReceiveAsync(); }
                    catch (Exception) { return; }
                    int i;
                    lock (Requests)
                    {
                        if (TypeOf(r.Buffer) >= 0x80 && !speaks)
                        {
                            Ext.Add(r.Buffer);
                            continue;
                        }
                        Requests.Add(r.Buffer);
                        i = Requests.Count - 1;
                    }
                    foreach (var o in script(i, r.Buffer)) Udp.Send(o, o.Length, r.RemoteEndPoint);
                }
            });
        }

        public void Dispose() => Udp.Dispose();
    }

    static async Task TestScripted()
    {
        var ok = new byte[] { 0, 0, 0, 1, 0x75, 0x30 };
        int joins = 0;
        using (var l = new Lobby((i, req) =>
        {
            if (TypeOf(req) == 0x40) return new[] { EmptyList(req) };
            if (joins++ == 0) return new byte[0][];
            var stray = Reply(req, MessageType.JoinSuccess, 0, 0, 0, 1, 0, 9);
            stray[stray.Length - 1] ^= 1;
            return new[] { stray, Reply(req, MessageType.JoinSuccess, 0, 0, 0, 7, 0, 9), Reply(req, MessageType.JoinSuccess, ok) };
        }))
        using (var c = await Client.ConnectAsync(l.Addr, new ClientOptions { Timeout = TimeSpan.FromMilliseconds(300) }))
        {
            var seat = await c.JoinAsync(1);
            Check(seat.Room == 1 && seat.Port == 30000 && seat.Address.Equals(IPAddress.Loopback), "retried join's seat");
            Check(l.Requests.Count == 3 && Hex(l.Requests[1]) == Hex(l.Requests[2]) && l.Ext.Count == 1,
                "the probe's LIST, then one JOIN twice: " + l.Requests.Count);
        }
        using (var l = new Lobby((i, req) => new[] { TypeOf(req) == 0x40 ? EmptyList(req) : Reply(req, MessageType.JoinFailed) }))
        using (var c = await Client.ConnectAsync(l.Addr))
        {
            try
            {
                await c.JoinAsync(3);
                Check(false, "JOIN_FAILED accepted");
            }
            catch (FoyerRefusedException e)
            {
                Check(e.Reason == Reason.Unspecified, "refusal's reason");
            }
        }
        using (var l = new Lobby((i, req) => new byte[0][]))
        using (var c = await Client.ConnectAsync(l.Addr, new ClientOptions { Timeout = TimeSpan.FromMilliseconds(50), Attempts = 3 }))
        {
            await Throws<FoyerTimeoutException>(() => c.ListAsync(), "silence");
            Check(l.Ext.Count == 1 && l.Requests.Count == 4 && l.Requests.Skip(1).Select(Hex).Distinct().Count() == 1,
                "one probe, then three attempts of one datagram");
        }
        using (var l = new Lobby((i, req) => new[] { EmptyList(req) }))
        using (var c = await Client.ConnectAsync(l.Addr, new ClientOptions { Timeout = TimeSpan.FromMilliseconds(500) }))
        {
            await Throws<FoyerNotSupportedException>(() => c.JoinAsync("abcdef"), "join by code");
            await Throws<FoyerNotSupportedException>(() => c.JoinAsync(1, "pw"), "join with a password");
            await Throws<FoyerNotSupportedException>(() => c.CreateAsync(new CreateOptions { Private = true }), "create a private room");
            await Throws<FoyerNotSupportedException>(() => c.ListAsync(new Filter { Mode = "ctf" }), "filter by mode");
            await Throws<FoyerNotSupportedException>(() => c.QuickJoinAsync(new Filter { Map = "dust" }), "quick join by map");
            Check(l.Ext.Count == 1, "a seed lobby is asked once: " + l.Ext.Count);
        }
        using (var l = new Lobby((i, req) => new[] {
            TypeOf(req) == 0x40 ? Reply(req, MessageType.RoomList, 0, 0) : Reply(req, MessageType.RoomCreated, 0, 0, 0, 5, 0x75, 0x35) }))
        using (var c = await Client.ConnectAsync(l.Addr, new ClientOptions { Framing = Framing.Legacy, Timeout = TimeSpan.FromMilliseconds(500) }))
        {
            Check((await c.CreateAsync(new CreateOptions { Name = "ignored by a seed lobby" })).Room == 5, "create");
            Check(l.Requests.Count == 3 && l.Requests.Concat(l.Ext).All(r => r[0] == 0xA3) &&
                  TypeOf(l.Requests[1]) == 0x40 && TypeOf(l.Requests[2]) == 0x42, "create lists first, in the legacy framing");
        }
        var extJoins = new List<byte[]>();
        using (var l = new Lobby((i, req) =>
        {
            if (TypeOf(req) < 0x80) return new[] { EmptyList(req) };
            if (req[9] == 0)
            {
                Check(req.Length == Client.PadTo, "padded until it has a token: " + req.Length);
                return new[] { Reply(req, MessageType.ExtRetry, 1, 4, (byte)'t', (byte)'o', (byte)'k', (byte)'n') };
            }
            Check(Encoding.ASCII.GetString(req, 10, req[9]) == "tokn", "the retry token echoed");
            if (TypeOf(req) == 0x84)
            {
                lock (extJoins) extJoins.Add(req);
                return extJoins.Count == 1 ? new byte[0][] : new[] { SeatReply(req, 7, 192, 0, 2, 7) };
            }
            return new[] { Reply(req, MessageType.ExtRefused, 1, 4) };
        }, true))
        using (var c = await Client.ConnectAsync(l.Addr, new ClientOptions { Timeout = TimeSpan.FromMilliseconds(300) }))
        {
            var seat = await c.JoinAsync("abcdef");
            Check(seat.Room == 7 && seat.Address.ToString() == "192.0.2.7" && seat.Code == "ABCDEF" && Hex(seat.Token) == Hex(SeatToken) &&
                  seat.Expires == DateTimeOffset.FromUnixTimeSeconds(1700000000), "the extension's seat");
            Check(extJoins.Count == 2 && Hex(extJoins[0]) == Hex(extJoins[1]), "an extension retry reuses the datagram");
            try
            {
                await c.CreateAsync(new CreateOptions { Name = "x", Password = "pw" });
                Check(false, "EXT_REFUSED accepted");
            }
            catch (FoyerRefusedException e)
            {
                Check(e.Reason == Reason.WrongPassword, "EXT_REFUSED's reason: " + e.Reason);
            }
        }
        using (var l = new Lobby((i, req) => TypeOf(req) == 0x80 ? new[] { Reply(req, MessageType.ExtRooms, 1, 0, 0, 0, 0, 0) }
            : TypeOf(req) == 0x86 ? new[] { SeatReply(req, (byte)req[3]) } : new byte[0][], true))
        using (var c = await Client.ConnectAsync(l.Addr, new ClientOptions { Timeout = TimeSpan.FromMilliseconds(500) }))
        {
            var seats = await Task.WhenAll(Enumerable.Range(0, 3).Select(k => c.QuickJoinAsync(new Filter { Mode = "ctf" })));
            Check(seats.Select(x => x.Room).Distinct().Count() == 3 && l.Requests.Count(r => TypeOf(r) == 0x80) == 1,
                "concurrent quick joins, one probe");
        }
        int closedPort;
        using (var gone = new UdpClient(new IPEndPoint(IPAddress.Loopback, 0))) closedPort = ((IPEndPoint)gone.Client.LocalEndPoint).Port;
        using (var c = await Client.ConnectAsync("127.0.0.1:" + closedPort, new ClientOptions { Timeout = TimeSpan.FromSeconds(1) }))
            await Throws<FoyerUnreachableException>(() => c.ListAsync(), "closed port");
    }

    static async Task TestLive(string lobby)
    {
        foreach (var f in new[] { Framing.Compact, Framing.Legacy })
        {
            using (var a = await Client.ConnectAsync(lobby, new ClientOptions { Framing = f }))
            using (var b = await Client.ConnectAsync(lobby, new ClientOptions { Framing = f }))
            {
                var seat = await a.CreateAsync();
                Check(seat.Port > 0, f + ": create");
                var rooms = await b.ListAsync(new Filter { State = RoomState.Waiting });
                Check(rooms.Any(r => r.Id == seat.Room), f + ": room " + seat.Room + " listed");
                var joined = await b.JoinAsync(seat.Room);
                Check(joined.Room == seat.Room && joined.Port == seat.Port, f + ": join");
                await Throws<FoyerRefusedException>(() => b.JoinAsync(0xFFFFFFF0u), f + ": join a room that is not");

                string mode = "cs" + System.Diagnostics.Process.GetCurrentProcess().Id + f.ToString()[0]; // this run's rooms only
                var named = await a.CreateAsync(new CreateOptions
                {
                    Name = "CSharp night", Mode = mode, Password = "pw", Tags = new Dictionary<string, string> { { "sdk", "csharp" } },
                });
                Check(named.Code.Length == 6 && named.Token.Length > 0 && named.Expires > DateTimeOffset.UtcNow, f + ": a named room's seat");
                var found = await b.ListAsync(new Filter { Mode = mode, NamePrefix = "CSharp" });
                Check(found.Count == 1 && found[0].Id == named.Room && found[0].Name == "CSharp night" && found[0].Code == named.Code &&
                      found[0].HasPassword && TagsText(found[0].Tags) == "sdk=csharp", f + ": listed by a filter");
                Check((await b.ListAsync(new Filter { Mode = mode, NamePrefix = "Go" })).Count == 0, f + ": a filter that finds none");
                try
                {
                    await b.JoinAsync(named.Code.ToLowerInvariant(), "wrong");
                    Check(false, f + ": a wrong password accepted");
                }
                catch (FoyerRefusedException e)
                {
                    Check(e.Reason == Reason.WrongPassword, f + ": a wrong password's reason: " + e.Reason);
                }
                var byCode = await b.JoinAsync(named.Code.ToLowerInvariant(), "pw");
                Check(byCode.Room == named.Room && byCode.Port == named.Port, f + ": join by code");
                var quick = await b.QuickJoinAsync(new Filter { Mode = mode + "q" });
                Check(quick.Room != named.Room && quick.Port > 0 && quick.Token.Length > 0, f + ": quick join");
            }
        }
    }

    // RoomSocket is a fresh socket connected to seat's room.
    static Socket RoomSocket(Seat seat)
    {
        var s = new Socket(seat.Address.AddressFamily, SocketType.Dgram, ProtocolType.Udp);
        s.Connect(new IPEndPoint(seat.Address, seat.Port));
        return s;
    }

    static IPAddress AnyOf(AddressFamily f) => f == AddressFamily.InterNetworkV6 ? IPAddress.IPv6Any : IPAddress.Any;
    static IPAddress LoopbackOf(AddressFamily f) => f == AddressFamily.InterNetworkV6 ? IPAddress.IPv6Loopback : IPAddress.Loopback;

    // Unconnected is a fresh socket of family bound to every address (an IPv6 one
    // takes IPv4 too), not connected: a game's ordinary socket.
    static Socket Unconnected(AddressFamily family)
    {
        var s = new Socket(family, SocketType.Dgram, ProtocolType.Udp);
        if (family == AddressFamily.InterNetworkV6) s.DualMode = true;
        s.Bind(new IPEndPoint(AnyOf(family), 0));
        return s;
    }

    // TakesOthers tells whether s, bound to every address, still reads a
    // datagram from a peer other than its room: it is not connected.
    static bool TakesOthers(Socket s)
    {
        var local = (IPEndPoint)s.LocalEndPoint;
        using (var other = new Socket(local.AddressFamily, SocketType.Dgram, ProtocolType.Udp))
        {
            other.SendTo(new byte[] { 42 }, new IPEndPoint(LoopbackOf(local.AddressFamily), local.Port));
            int port = ((IPEndPoint)other.LocalEndPoint).Port;
            var buf = new byte[65536];
            while (s.Poll(1000000, SelectMode.SelectRead))
            {
                EndPoint from = new IPEndPoint(AnyOf(local.AddressFamily), 0);
                s.ReceiveFrom(buf, ref from);
                if (((IPEndPoint)from).Port == port) return true;
            }
            return false;
        }
    }

    static async Task TestLivePresent(string lobby, object golden)
    {
        Seat seat;
        using (var a = await Client.ConnectAsync(lobby)) seat = await a.CreateAsync();
        for (int k = 0; k < 2; k++) // in, and back into the seat from another socket
        {
            using (var s = RoomSocket(seat))
            {
                try { await Client.PresentAsync(s, seat, TimeSpan.FromSeconds(1)); Check(true, "present"); }
                catch (FoyerException e) { Check(false, "present " + k + ": " + e.Message); }
            }
        }
        // From unconnected sockets: one of the seat's family, then an IPv6 one,
        // which reaches an IPv4 room at its IPv4-mapped address. Each presents
        // again once it has sent and read, as a game's socket has.
        foreach (var family in new[] { seat.Address.AddressFamily, AddressFamily.InterNetworkV6 })
        {
            using (var s = Unconnected(family))
            {
                try
                {
                    await Client.PresentAsync(s, seat, TimeSpan.FromSeconds(1));
                    Check(TakesOthers(s), "present from an unconnected " + family + " socket: it was left connected");
                    await Client.PresentAsync(s, seat, TimeSpan.FromSeconds(1));
                    Check(true, "present again from an unconnected " + family + " socket");
                }
                catch (FoyerException e) { Check(false, "present from an unconnected " + family + " socket: " + e.Message); }
            }
        }
        var forged = (byte[])seat.Token.Clone();
        forged[forged.Length - 1] ^= 1; // its signature no longer holds: the door drops it unanswered
        var bad = new Seat { Room = seat.Room, Address = seat.Address, Port = seat.Port, Token = forged };
        using (var s = RoomSocket(seat))
            await Throws<FoyerTimeoutException>(() => Client.PresentAsync(s, bad, TimeSpan.FromMilliseconds(300), 2), "a forged token");

        // An unconnected socket reads every peer's datagrams: an EXT_ADMITTED
        // for the room from another address must not count.
        var admitted = Unhex(Str(Arr(golden, "ext").First(p => Str(p, "name") == "EXT_ADMITTED room 7"), "hex"));
        int at = admitted.Length - 8; // the room id, then the CRC
        for (int i = 0; i < 4; i++) admitted[at + i] = (byte)(seat.Room >> (24 - 8 * i));
        uint crc = Codec.Crc32(admitted, 0, at + 4);
        for (int i = 0; i < 4; i++) admitted[at + 4 + i] = (byte)(crc >> (24 - 8 * i));
        var m = Codec.Decode(admitted, admitted.Length);
        Check(m.Type == MessageType.ExtAdmitted && m.Room == seat.Room, "the forger's EXT_ADMITTED for room " + seat.Room);
        var seatFamily = seat.Address.AddressFamily;
        using (var s = Unconnected(seatFamily))
        using (var forger = new Socket(seatFamily, SocketType.Dgram, ProtocolType.Udp))
        {
            var target = new IPEndPoint(LoopbackOf(seatFamily), ((IPEndPoint)s.LocalEndPoint).Port);
            var presenting = Client.PresentAsync(s, bad, TimeSpan.FromMilliseconds(300), 2);
            var forging = Task.Run(async () =>
            {
                for (; !presenting.IsCompleted; await Task.Delay(50)) forger.SendTo(admitted, target);
            });
            await Throws<FoyerTimeoutException>(() => presenting, "a forged token from an unconnected socket, an EXT_ADMITTED coming from elsewhere");
            await forging;
        }
    }

    static async Task Bench(string lobby, int n)
    {
        using (var c = await Client.ConnectAsync(lobby))
        {
            await c.ListAsync();
            var clock = System.Diagnostics.Stopwatch.StartNew();
            for (int i = 0; i < n; i++) await c.ListAsync();
            long list = clock.ElapsedTicks;
            for (int i = 0; i < n; i++)
            {
                try { await c.JoinAsync(0xFFFFFFF0u); }
                catch (FoyerRefusedException) { }
            }
            long join = clock.ElapsedTicks - list;
            double ns = 1e9 / System.Diagnostics.Stopwatch.Frequency;
            Console.WriteLine("list_ns=" + (long)(list * ns / n) + " join_ns=" + (long)(join * ns / n));
        }
    }

    static int Main(string[] args)
    {
        if (args.Length < 1 || args.Length > 3)
        {
            Console.Error.WriteLine("usage: FoyerTest.exe GOLDEN_JSON [HOST:PORT [N]]");
            return 2;
        }
        var golden = Json.Parse(File.ReadAllText(args[0]));
        TestGolden(golden);
        TestScripted().GetAwaiter().GetResult();
        if (args.Length == 2)
        {
            TestLive(args[1]).GetAwaiter().GetResult();
            TestLivePresent(args[1], golden).GetAwaiter().GetResult();
        }
        if (args.Length == 3) Bench(args[1], int.Parse(args[2])).GetAwaiter().GetResult();
        Console.WriteLine((checks - failures) + " passed, " + failures + " failed");
        return failures == 0 ? 0 : 1;
    }
}
