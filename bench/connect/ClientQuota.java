// Sets or removes a broker quota `producer_byte_rate` for one client id, with the Java Admin
// client from the jars bench/connect/fetch.ts fetches (Kafka's kafka-configs tool is not among
// them). Run as a single-file source program: java -cp 'libs/*' ClientQuota.java H:P CLIENT_ID BYTES|delete
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;

public class ClientQuota {
  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    props.put("bootstrap.servers", args[0]);
    Double rate = args[2].equals("delete") ? null : Double.valueOf(args[2]);
    ClientQuotaEntity entity = new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, args[1]));
    try (Admin admin = Admin.create(props)) {
      admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity,
          List.of(new ClientQuotaAlteration.Op("producer_byte_rate", rate))))).all().get();
    }
  }
}
