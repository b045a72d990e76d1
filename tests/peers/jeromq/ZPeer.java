// JeroMQ sockets driven line by line over stdin/stdout, for tests/peers/test_jeromq.py.
//
// One JVM serves a whole test session: each command names a socket, so scenarios come and go
// without a JVM start each. Frames are hex, a message is its frames joined by "," (an empty
// frame is an empty string). Every command answers exactly one line: "ok ...", "msg ...",
// "timeout" or "err <what went wrong>".
//
//   new NAME TYPE [IDENTITY_HEX]   a socket (linger 0, 5 s send timeout)
//   bind NAME HOST                 -> ok tcp://HOST:PORT (a port the system picks)
//   connect NAME ENDPOINT          -> ok
//   send NAME F1,F2,...            -> ok | timeout
//   recv NAME TIMEOUT_MS           -> msg F1,F2,... | timeout
//   sub NAME HEX / unsub NAME HEX  -> ok
//   close NAME                     -> ok
//   version                        -> ok JeroMQ's version
//   quit                           -> ok, then the JVM exits

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.zeromq.ZMQ;
import org.zeromq.ZMQException;

public final class ZPeer {
    private static final char[] DIGITS = "0123456789abcdef".toCharArray();
    private static final Map<String, Integer> TYPES = new HashMap<>();

    private static final Map<String, Integer> ARGUMENTS = Map.of(
            "new", 2, "bind", 2, "connect", 2, "recv", 2, "send", 1, "sub", 1, "unsub", 1, "close", 1);

    static {
        TYPES.put("PAIR", ZMQ.PAIR);
        TYPES.put("PUB", ZMQ.PUB);
        TYPES.put("SUB", ZMQ.SUB);
        TYPES.put("REQ", ZMQ.REQ);
        TYPES.put("REP", ZMQ.REP);
        TYPES.put("DEALER", ZMQ.DEALER);
        TYPES.put("ROUTER", ZMQ.ROUTER);
        TYPES.put("PULL", ZMQ.PULL);
        TYPES.put("PUSH", ZMQ.PUSH);
        TYPES.put("XPUB", ZMQ.XPUB);
        TYPES.put("XSUB", ZMQ.XSUB);
    }

    private final ZMQ.Context context = ZMQ.context(1);
    private final Map<String, ZMQ.Socket> sockets = new HashMap<>();

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        ZPeer peer = new ZPeer();
        String line;
        while ((line = in.readLine()) != null) {
            String answer;
            try {
                answer = peer.run(line.trim().split(" ", -1));
            } catch (RuntimeException e) {
                answer = "err " + e.getClass().getSimpleName() + ": " + e.getMessage();
            }
            out.println(answer);
            if ("quit".equals(line.trim())) {
                break;
            }
        }
        peer.shutdown();
    }

    private String run(String[] cmd) {
        int needed = ARGUMENTS.getOrDefault(cmd[0], 0);
        if (cmd.length <= needed) {
            return "err " + cmd[0] + " needs " + needed + " argument(s)";
        }
        switch (cmd[0]) {
            case "version":
                return "ok " + ZMQ.getVersionString();
            case "quit":
                return "ok";
            case "new": {
                Integer type = TYPES.get(cmd[2]);
                if (type == null) {
                    return "err unknown socket type " + cmd[2];
                }
                if (sockets.containsKey(cmd[1])) {
                    return "err socket " + cmd[1] + " exists";
                }
                ZMQ.Socket socket = context.socket(type);
                socket.setLinger(0);
                socket.setSendTimeOut(5000);
                if (cmd.length > 3 && !cmd[3].isEmpty()) {
                    socket.setIdentity(unhex(cmd[3]));
                }
                sockets.put(cmd[1], socket);
                return "ok";
            }
            default:
                break;
        }
        ZMQ.Socket socket = sockets.get(cmd[1]);
        if (socket == null) {
            return "err no socket " + cmd[1];
        }
        switch (cmd[0]) {
            case "bind": {
                // A port the system picks (JeroMQ 0.3.6 binds port 0 but its last endpoint then
                // still says 0, and bindToRandomPort walks up from 49152); a port taken between
                // the probe and the bind is tried again.
                for (int attempt = 0; ; attempt++) {
                    String endpoint = "tcp://" + cmd[2] + ":" + freePort(cmd[2]);
                    try {
                        socket.bind(endpoint);
                        return "ok " + endpoint;
                    } catch (ZMQException e) {
                        if (attempt == 20) {
                            throw e;
                        }
                    }
                }
            }
            case "connect":
                socket.connect(cmd[2]);
                return "ok";
            case "send": {
                String[] frames = cmd.length > 2 ? cmd[2].split(",", -1) : new String[] {""};
                for (int i = 0; i < frames.length; i++) {
                    int flags = i < frames.length - 1 ? ZMQ.SNDMORE : 0;
                    if (!socket.send(unhex(frames[i]), flags)) {
                        return "timeout";
                    }
                }
                return "ok";
            }
            case "recv": {
                socket.setReceiveTimeOut(Integer.parseInt(cmd[2]));
                List<String> frames = new ArrayList<>();
                do {
                    byte[] frame = socket.recv(0);
                    if (frame == null) {
                        return "timeout";
                    }
                    frames.add(hex(frame));
                } while (socket.hasReceiveMore());
                return "msg " + String.join(",", frames);
            }
            case "sub":
                socket.subscribe(unhex(cmd.length > 2 ? cmd[2] : ""));
                return "ok";
            case "unsub":
                socket.unsubscribe(unhex(cmd.length > 2 ? cmd[2] : ""));
                return "ok";
            case "close":
                sockets.remove(cmd[1]).close();
                return "ok";
            default:
                return "err unknown command " + cmd[0];
        }
    }

    private void shutdown() {
        for (ZMQ.Socket socket : sockets.values()) {
            socket.close();
        }
        context.term();
    }

    private static int freePort(String host) {
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getByName(host))) {
            return probe.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static byte[] unhex(String text) {
        if (text.length() % 2 != 0) {
            throw new IllegalArgumentException("odd number of hex digits: " + text);
        }
        byte[] out = new byte[text.length() / 2];
        for (int i = 0; i < out.length; i++) {
            int high = Character.digit(text.charAt(2 * i), 16);
            int low = Character.digit(text.charAt(2 * i + 1), 16);
            if (high < 0 || low < 0) {
                throw new IllegalArgumentException("not hex: " + text);
            }
            out[i] = (byte) (high << 4 | low);
        }
        return out;
    }

    private static String hex(byte[] data) {
        char[] out = new char[data.length * 2];
        for (int i = 0; i < data.length; i++) {
            out[2 * i] = DIGITS[(data[i] >> 4) & 0xf];
            out[2 * i + 1] = DIGITS[data[i] & 0xf];
        }
        return new String(out);
    }
}
