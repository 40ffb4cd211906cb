// Prints, for each line of stdin (a key, UTF-8), the partition Kafka's Java producer puts that
// key in among args[0] partitions: BuiltInPartitioner.partitionForKey, which the default
// partitioner uses (murmur2, toPositive, modulo). Run by test/helpers/java-partitions.ts.
import java.io.*;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
public class JavaPartitions {
  public static void main(String[] args) throws IOException {
    int n = Integer.parseInt(args[0]);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      byte[] key = line.getBytes(StandardCharsets.UTF_8);
      System.out.println(BuiltInPartitioner.partitionForKey(key, n));
    }
  }
}
