// Tests of Foyer.cs: the shared golden packets, a scripted lobby on a real
// loopback socket, and, given a lobby's address, a real lobby:
//
//     mono FoyerTest.exe GOLDEN_JSON [HOST:PORT [N]]
//
// With N, it then prints the mean round trip of N LISTs and of N JOINs
// (answered JOIN_FAILED) against that lobby.
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
        foreach (var p in Arr(g, "malformed"))
        {
            var b = Unhex(Str(p, "hex"));
            string why = "";
            try { Codec.Decode(b, b.Length); }
            catch (MalformedPacketException e) { why = e.Reason; }
            Check(why == Str(p, "reason"), Str(p, "name") + ": refused as '" + why + "', want " + Str(p, "reason"));
        }
    }

    static byte[] Reply(byte[] req, MessageType t, params byte[] payload)
    {
        var b = new byte[8 + payload.Length + 4];
        ushort seq = Codec.Decode(req, req.Length).Seq;
        b[0] = 2; b[1] = (byte)t; b[2] = (byte)(seq >> 8); b[3] = (byte)seq;
        b[5] = (byte)payload.Length; b[7] = (byte)payload.Length;
        Array.Copy(payload, 0, b, 8, payload.Length);
        uint crc = Codec.Crc32(b, 0, 8 + payload.Length);
        for (int i = 0; i < 4; i++) b[8 + payload.Length + i] = (byte)(crc >> (24 - 8 * i));
        return b;
    }

    // Lobby answers each request with script(index, request).
    sealed class Lobby : IDisposable
    {
        public readonly UdpClient Udp = new UdpClient(new IPEndPoint(IPAddress.Loopback, 0));
        public readonly List<byte[]> Requests = new List<byte[]>();
        public string Addr => "127.0.0.1:" + ((IPEndPoint)Udp.Client.LocalEndPoint).Port;

        public Lobby(Func<int, byte[], byte[][]> script)
        {
            Task.Run(async () =>
            {
                while (true)
                {
                    UdpReceiveResult r;
                    try { r = await Udp.ReceiveAsync(); }
                    catch (Exception) { return; }
                    int i;
                    lock (Requests) { Requests.Add(r.Buffer); i = Requests.Count - 1; }
                    foreach (var o in script(i, r.Buffer)) Udp.Send(o, o.Length, r.RemoteEndPoint);
                }
            });
        }

        public void Dispose() => Udp.Dispose();
    }

    static async Task TestScripted()
    {
        var ok = new byte[] { 0, 0, 0, 1, 0x75, 0x30 };
        using (var l = new Lobby((i, req) =>
        {
            if (i == 0) return new byte[0][];
            var stray = Reply(req, MessageType.JoinSuccess, 0, 0, 0, 1, 0, 9);
            stray[stray.Length - 1] ^= 1;
            return new[] { stray, Reply(req, MessageType.JoinSuccess, 0, 0, 0, 7, 0, 9), Reply(req, MessageType.JoinSuccess, ok) };
        }))
        using (var c = await Client.ConnectAsync(l.Addr, new ClientOptions { Timeout = TimeSpan.FromMilliseconds(200) }))
        {
            var seat = await c.JoinAsync(1);
            Check(seat.Room == 1 && seat.Port == 30000 && seat.Address.Equals(IPAddress.Loopback), "retried join's seat");
            Check(l.Requests.Count == 2 && Hex(l.Requests[0]) == Hex(l.Requests[1]), "a retry reuses the datagram: " + l.Requests.Count);
        }
        using (var l = new Lobby((i, req) => new[] { Reply(req, MessageType.JoinFailed) }))
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
            Check(l.Requests.Count == 3 && l.Requests.Select(Hex).Distinct().Count() == 1, "three attempts, one datagram");
            await Throws<FoyerNotSupportedException>(() => c.JoinAsync("ABCDEF"), "join by code");
            await Throws<FoyerNotSupportedException>(() => c.QuickJoinAsync(), "quick join");
            await Throws<FoyerNotSupportedException>(() => c.CreateAsync(new CreateOptions { Name = "x" }), "create with a name");
            await Throws<FoyerNotSupportedException>(() => c.ListAsync(new Filter { Mode = "ctf" }), "filter by mode");
            Check(l.Requests.Count == 3, "an extension verb sent something");
        }
        using (var l = new Lobby((i, req) => new[] {
            Codec.Decode(req, req.Length).Type == MessageType.ListRooms ? Reply(req, MessageType.RoomList, 0, 0)
                : Reply(req, MessageType.RoomCreated, 0, 0, 0, 5, 0x75, 0x35) }))
        using (var c = await Client.ConnectAsync(l.Addr, new ClientOptions { Framing = Framing.Legacy }))
        {
            Check((await c.CreateAsync()).Room == 5, "create");
            Check(l.Requests.Count == 2 && l.Requests.All(r => r[0] == 0xA3) &&
                  Codec.Decode(l.Requests[0], l.Requests[0].Length).Type == MessageType.ListRooms, "create lists first, in the legacy framing");
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
            }
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
        TestGolden(Json.Parse(File.ReadAllText(args[0])));
        TestScripted().GetAwaiter().GetResult();
        if (args.Length >= 2) TestLive(args[1]).GetAwaiter().GetResult();
        if (args.Length == 3) Bench(args[1], int.Parse(args[2])).GetAwaiter().GetResult();
        Console.WriteLine((checks - failures) + " passed, " + failures + " failed");
        return failures == 0 ? 0 : 1;
    }
}
